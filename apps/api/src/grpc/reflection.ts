/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha: grpcurl, Postman and BloomRPC use
 * either) answering from the FileDescriptorSet protoc wrote (schemas/proto/tickwork.descriptor-set.binpb),
 * so tools get the committed file names, dependencies, map entries and proto3 optionals exactly as
 * protoc would give them. A descriptor rebuilt from a loaded schema loses those.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  status as grpcStatus,
  type Server,
  type ServerDuplexStream,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { indexDescriptorSet, type DescriptorIndex } from './descriptor-index';
import { protoDirectory } from './proto-files';

/** The committed descriptor set, relative to protoDirectory() (written by schemas/proto/descriptor-set.sh). */
export const DESCRIPTOR_SET_FILE = 'tickwork.descriptor-set.binpb';

/** The reflection protocol versions served, each as its package and .proto file. */
const REFLECTION_VERSIONS = [
  { pkg: 'grpc.reflection.v1', file: 'grpc/reflection/v1/reflection.proto' },
  { pkg: 'grpc.reflection.v1alpha', file: 'grpc/reflection/v1alpha/reflection.proto' },
];

/** The reflection services' full names (they are in the descriptor set too, so they list themselves). */
export const REFLECTION_SERVICES = REFLECTION_VERSIONS.map((v) => `${v.pkg}.ServerReflection`);

type Request = {
  host?: string;
  /** Which request field is set (proto-loader's virtual oneof field). */
  message_request?:
    | 'file_by_filename'
    | 'file_containing_symbol'
    | 'file_containing_extension'
    | 'all_extension_numbers_of_type'
    | 'list_services';
  file_by_filename?: string;
  file_containing_symbol?: string;
  file_containing_extension?: { containing_type?: string; extension_number?: number };
  all_extension_numbers_of_type?: string;
  list_services?: string;
};

/** The shipped descriptor set, indexed. */
export function loadDescriptorIndex(): DescriptorIndex {
  return indexDescriptorSet(readFileSync(join(protoDirectory(), DESCRIPTOR_SET_FILE)));
}

/** The answer to one ServerReflectionRequest (the oneof fields of ServerReflectionResponse). */
export function answerReflection(index: DescriptorIndex, req: Request): Record<string, unknown> {
  const notFound = (what: string) => ({
    error_response: { error_code: grpcStatus.NOT_FOUND, error_message: `${what} not found` },
  });
  const files = (name: string | undefined, what: string) => {
    const protos = name === undefined ? undefined : index.fileWithDependencies(name);
    return protos ? { file_descriptor_response: { file_descriptor_proto: protos } } : notFound(what);
  };
  switch (req.message_request) {
    case 'list_services':
      return { list_services_response: { service: index.services.map((name) => ({ name })) } };
    case 'file_by_filename':
      return files(req.file_by_filename, `file ${req.file_by_filename}`);
    case 'file_containing_symbol': {
      const symbol = req.file_containing_symbol ?? '';
      return files(index.fileOfSymbol(symbol), `symbol ${symbol}`);
    }
    case 'file_containing_extension': {
      const { containing_type = '', extension_number = 0 } = req.file_containing_extension ?? {};
      return files(
        index.fileOfExtension(containing_type, extension_number),
        `extension ${extension_number} of ${containing_type}`,
      );
    }
    case 'all_extension_numbers_of_type': {
      const type = req.all_extension_numbers_of_type ?? '';
      const numbers = index.extensionNumbersOf(type);
      return numbers
        ? { all_extension_numbers_response: { base_type_name: type, extension_number: numbers } }
        : notFound(`type ${type}`);
    }
    case undefined:
      return {
        error_response: {
          error_code: grpcStatus.INVALID_ARGUMENT,
          error_message: 'ServerReflectionRequest names no message_request',
        },
      };
  }
}

/** Adds grpc.reflection.v1 and v1alpha ServerReflection to a gRPC server. */
export function addReflection(server: Pick<Server, 'addService'>, index: DescriptorIndex): void {
  for (const version of REFLECTION_VERSIONS) {
    const definition = loadSync(version.file, {
      keepCase: true,
      longs: Number,
      enums: String,
      defaults: false,
      oneofs: true,
      includeDirs: [protoDirectory()],
    });
    const service = definition[`${version.pkg}.ServerReflection`] as ServiceDefinition;
    server.addService(service, {
      ServerReflectionInfo: (call: ServerDuplexStream<Request, Record<string, unknown>>) => {
        call.on('data', (req: Request) => {
          call.write({ valid_host: req.host ?? '', original_request: req, ...answerReflection(index, req) });
        });
        call.on('end', () => call.end());
        call.on('error', () => call.end());
      },
    });
  }
}
