/**
 * An index over a FileDescriptorSet written by protoc, for server reflection: each file's bytes
 * exactly as protoc serialized them (never re-encoded, so nothing protoc wrote is lost), its
 * dependencies, and which file defines each fully-qualified symbol and extension.
 */
import { Reader } from 'protobufjs';
import { FileDescriptorProto } from 'protobufjs/ext/descriptor';

/** The parts of descriptor.proto the index reads (protobufjs/ext/descriptor's camelCase names). */
interface FieldShape {
  name: string;
  number: number;
  extendee?: string;
}
interface MessageShape {
  name: string;
  field?: FieldShape[];
  extension?: FieldShape[];
  nestedType?: MessageShape[];
  enumType?: EnumShape[];
  oneofDecl?: { name: string }[];
}
interface EnumShape {
  name: string;
  value?: { name: string }[];
}
interface FileShape {
  name: string;
  package?: string;
  dependency?: string[];
  messageType?: MessageShape[];
  enumType?: EnumShape[];
  service?: { name: string; method?: { name: string }[] }[];
  extension?: FieldShape[];
}

/** What reflection needs to know about a protoc-written descriptor set. */
export interface DescriptorIndex {
  /** Fully-qualified names of every service in the set, in file order. */
  readonly services: readonly string[];
  /** The named file first, then its transitive dependencies (each once), as protoc wrote them; undefined if unknown. */
  fileWithDependencies(name: string): Buffer[] | undefined;
  /** The file defining a fully-qualified symbol (message, field, enum, value, service, method…). */
  fileOfSymbol(symbol: string): string | undefined;
  /** The file declaring extension `number` of message `extendee`. */
  fileOfExtension(extendee: string, number: number): string | undefined;
  /** Extension numbers declared for a message type; undefined if the type is unknown. */
  extensionNumbersOf(messageType: string): number[] | undefined;
}

/** The raw bytes of each `repeated FileDescriptorProto file = 1` entry of a FileDescriptorSet. */
function fileEntries(set: Uint8Array): Uint8Array[] {
  const reader = Reader.create(set);
  const files: Uint8Array[] = [];
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    if (tag === ((1 << 3) | 2)) {
      const length = reader.uint32();
      files.push(set.subarray(reader.pos, reader.pos + length));
      reader.pos += length;
    } else {
      reader.skipType(tag & 7);
    }
  }
  return files;
}

const unqualified = (name: string) => (name.startsWith('.') ? name.slice(1) : name);

/** Builds the index; throws on a duplicate file or symbol (protoc never writes one, so the set is not protoc's). */
export function indexDescriptorSet(set: Uint8Array): DescriptorIndex {
  const files = new Map<string, { bytes: Buffer; dependencies: string[] }>();
  const symbols = new Map<string, string>();
  const extensions = new Map<string, string>();
  const extensionNumbers = new Map<string, number[]>();
  const messages = new Set<string>();
  const services: string[] = [];

  for (const bytes of fileEntries(set)) {
    const file = FileDescriptorProto.toObject(FileDescriptorProto.decode(bytes), {
      arrays: true,
    }) as FileShape;
    if (files.has(file.name)) throw new Error(`descriptor set: file ${file.name} twice`);
    files.set(file.name, { bytes: Buffer.from(bytes), dependencies: file.dependency ?? [] });
    const define = (symbol: string) => {
      if (symbols.has(symbol)) throw new Error(`descriptor set: symbol ${symbol} twice`);
      symbols.set(symbol, file.name);
    };
    const extend = (scope: string, ext: FieldShape) => {
      define(`${scope}${ext.name}`);
      const extendee = unqualified(ext.extendee ?? '');
      extensions.set(`${extendee}#${ext.number}`, file.name);
      extensionNumbers.set(extendee, [...(extensionNumbers.get(extendee) ?? []), ext.number]);
    };
    // Enum values are scoped like their enum's siblings, as in protoc's symbol table.
    const defineEnum = (scope: string, e: EnumShape) => {
      define(`${scope}${e.name}`);
      for (const v of e.value ?? []) define(`${scope}${v.name}`);
    };
    const defineMessage = (scope: string, m: MessageShape) => {
      const name = `${scope}${m.name}`;
      define(name);
      messages.add(name);
      for (const f of m.field ?? []) define(`${name}.${f.name}`);
      for (const o of m.oneofDecl ?? []) define(`${name}.${o.name}`);
      for (const e of m.enumType ?? []) defineEnum(`${name}.`, e);
      for (const n of m.nestedType ?? []) defineMessage(`${name}.`, n);
      for (const x of m.extension ?? []) extend(`${name}.`, x);
    };
    const scope = file.package ? `${file.package}.` : '';
    for (const m of file.messageType ?? []) defineMessage(scope, m);
    for (const e of file.enumType ?? []) defineEnum(scope, e);
    for (const x of file.extension ?? []) extend(scope, x);
    for (const s of file.service ?? []) {
      const name = `${scope}${s.name}`;
      define(name);
      services.push(name);
      for (const m of s.method ?? []) define(`${name}.${m.name}`);
    }
  }

  for (const [name, file] of files) {
    for (const dep of file.dependencies) {
      if (!files.has(dep)) throw new Error(`descriptor set: ${name} imports ${dep}, which is not in the set`);
    }
  }

  return {
    services,
    fileWithDependencies(name) {
      if (!files.has(name)) return undefined;
      const seen = new Set<string>();
      const order: Buffer[] = [];
      const queue = [name];
      while (queue.length > 0) {
        const next = queue.shift()!;
        if (seen.has(next)) continue;
        seen.add(next);
        const file = files.get(next)!;
        order.push(file.bytes);
        queue.push(...file.dependencies);
      }
      return order;
    },
    fileOfSymbol: (symbol) => symbols.get(unqualified(symbol)),
    fileOfExtension: (extendee, number) => extensions.get(`${unqualified(extendee)}#${number}`),
    extensionNumbersOf: (messageType) => {
      const name = unqualified(messageType);
      return messages.has(name) ? [...(extensionNumbers.get(name) ?? [])] : undefined;
    },
  };
}
