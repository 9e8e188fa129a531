import { FileDescriptorProto, FileDescriptorSet } from 'protobufjs/ext/descriptor';
import { indexDescriptorSet } from './descriptor-index';
import { answerReflection } from './reflection';

/** A small set as protoc would lay it out: imports before the files importing them. */
const FILES = [
  { name: 'base/v1/common.proto', package: 'base.v1', messageType: [{ name: 'Stamp' }] },
  {
    name: 'app/v1/app.proto',
    package: 'app.v1',
    dependency: ['base/v1/common.proto'],
    messageType: [
      {
        name: 'Thing',
        field: [{ name: 'id', number: 1 }],
        nestedType: [{ name: 'TagsEntry' }],
        enumType: [{ name: 'Kind', value: [{ name: 'KIND_UNSPECIFIED' }] }],
        oneofDecl: [{ name: '_id' }],
        extension: [{ name: 'note', number: 100, extendee: '.base.v1.Stamp' }],
      },
    ],
    enumType: [{ name: 'Color', value: [{ name: 'COLOR_RED' }] }],
    service: [{ name: 'Things', method: [{ name: 'GetThing' }] }],
  },
  { name: 'other.proto', dependency: ['app/v1/app.proto'], service: [{ name: 'Bare' }] },
];
const encodeSet = (files: object[]) =>
  FileDescriptorSet.encode(FileDescriptorSet.fromObject({ file: files })).finish();
const fileBytes = (name: string) =>
  Buffer.from(
    FileDescriptorProto.encode(FileDescriptorProto.fromObject(FILES.find((f) => f.name === name)!)).finish(),
  );
const index = indexDescriptorSet(encodeSet(FILES));

describe('indexDescriptorSet', () => {
  it('lists every service by its full name, in file order', () => {
    expect(index.services).toEqual(['app.v1.Things', 'Bare']);
  });

  it('returns a file first, then its transitive dependencies once each, as the set holds their bytes', () => {
    expect(index.fileWithDependencies('other.proto')).toEqual([
      fileBytes('other.proto'),
      fileBytes('app/v1/app.proto'),
      fileBytes('base/v1/common.proto'),
    ]);
    expect(index.fileWithDependencies('base/v1/common.proto')).toEqual([fileBytes('base/v1/common.proto')]);
    expect(index.fileWithDependencies('app_v1.proto')).toBeUndefined();
  });

  it('finds the file of messages, nested types, fields, oneofs, enums, enum values, services and methods', () => {
    for (const symbol of [
      'app.v1.Thing',
      '.app.v1.Thing',
      'app.v1.Thing.TagsEntry',
      'app.v1.Thing.id',
      'app.v1.Thing._id',
      'app.v1.Thing.Kind',
      'app.v1.Thing.KIND_UNSPECIFIED',
      'app.v1.Color',
      'app.v1.COLOR_RED',
      'app.v1.Things',
      'app.v1.Things.GetThing',
      'app.v1.Thing.note',
    ]) {
      expect([symbol, index.fileOfSymbol(symbol)]).toEqual([symbol, 'app/v1/app.proto']);
    }
    expect(index.fileOfSymbol('base.v1.Stamp')).toBe('base/v1/common.proto');
    expect(index.fileOfSymbol('app.v1.Color.COLOR_RED')).toBeUndefined();
    expect(index.fileOfSymbol('app.v1.Missing')).toBeUndefined();
  });

  it('finds extensions by extendee and number, and lists a type extension numbers', () => {
    expect(index.fileOfExtension('base.v1.Stamp', 100)).toBe('app/v1/app.proto');
    expect(index.fileOfExtension('base.v1.Stamp', 101)).toBeUndefined();
    expect(index.extensionNumbersOf('base.v1.Stamp')).toEqual([100]);
    expect(index.extensionNumbersOf('app.v1.Thing')).toEqual([]);
    expect(index.extensionNumbersOf('app.v1.Color')).toBeUndefined();
  });

  it('refuses a set protoc would not write: a file twice, a symbol twice, an import not in the set', () => {
    expect(() => indexDescriptorSet(encodeSet([FILES[0]!, FILES[0]!]))).toThrow(
      /file base\/v1\/common.proto twice/,
    );
    expect(() => indexDescriptorSet(encodeSet([FILES[0]!, { ...FILES[0]!, name: 'copy.proto' }]))).toThrow(
      /symbol base.v1.Stamp twice/,
    );
    expect(() => indexDescriptorSet(encodeSet([FILES[2]!]))).toThrow(/imports app\/v1\/app.proto/);
  });
});

describe('answerReflection', () => {
  it('lists services, and answers file and symbol requests with the file and its dependencies', () => {
    expect(answerReflection(index, { message_request: 'list_services', list_services: '' })).toEqual({
      list_services_response: { service: [{ name: 'app.v1.Things' }, { name: 'Bare' }] },
    });
    const app = {
      file_descriptor_response: {
        file_descriptor_proto: [fileBytes('app/v1/app.proto'), fileBytes('base/v1/common.proto')],
      },
    };
    expect(
      answerReflection(index, { message_request: 'file_by_filename', file_by_filename: 'app/v1/app.proto' }),
    ).toEqual(app);
    expect(
      answerReflection(index, {
        message_request: 'file_containing_symbol',
        file_containing_symbol: 'app.v1.Things.GetThing',
      }),
    ).toEqual(app);
    expect(
      answerReflection(index, {
        message_request: 'file_containing_extension',
        file_containing_extension: { containing_type: 'base.v1.Stamp', extension_number: 100 },
      }),
    ).toEqual(app);
    expect(
      answerReflection(index, {
        message_request: 'all_extension_numbers_of_type',
        all_extension_numbers_of_type: 'base.v1.Stamp',
      }),
    ).toEqual({
      all_extension_numbers_response: { base_type_name: 'base.v1.Stamp', extension_number: [100] },
    });
  });

  it('answers NOT_FOUND (5) naming what is unknown, and INVALID_ARGUMENT (3) for an empty request', () => {
    expect(
      answerReflection(index, { message_request: 'file_by_filename', file_by_filename: 'x.proto' }),
    ).toEqual({
      error_response: { error_code: 5, error_message: 'file x.proto not found' },
    });
    expect(
      answerReflection(index, { message_request: 'file_containing_symbol', file_containing_symbol: 'a.B' }),
    ).toEqual({ error_response: { error_code: 5, error_message: 'symbol a.B not found' } });
    expect(
      answerReflection(index, {
        message_request: 'file_containing_extension',
        file_containing_extension: { containing_type: 'app.v1.Thing', extension_number: 7 },
      }),
    ).toEqual({ error_response: { error_code: 5, error_message: 'extension 7 of app.v1.Thing not found' } });
    expect(
      answerReflection(index, {
        message_request: 'all_extension_numbers_of_type',
        all_extension_numbers_of_type: 'x.Y',
      }),
    ).toEqual({ error_response: { error_code: 5, error_message: 'type x.Y not found' } });
    expect(answerReflection(index, {})).toMatchObject({ error_response: { error_code: 3 } });
  });
});
