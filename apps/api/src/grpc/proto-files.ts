/** Where the .proto files are, and the loader options every Tickwork gRPC server and client uses. */
import { schemaDirectory } from '@tickwork/config';

/** The shipped schemas/proto folder. */
export function protoDirectory(): string {
  return schemaDirectory('proto');
}

/** The admin API and health protos, relative to protoDirectory(). */
export const PROTO_FILES = ['tickwork/admin/v1/admin.proto', 'grpc/health/v1/health.proto'];

/** @grpc/proto-loader options: snake_case fields, enum names, int64 as numbers, unset fields absent. */
export function loaderOptions(): {
  keepCase: true;
  longs: typeof Number;
  enums: typeof String;
  defaults: false;
  arrays: true;
  objects: true;
  oneofs: true;
  includeDirs: string[];
} {
  return {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: false,
    arrays: true,
    objects: true,
    oneofs: true,
    includeDirs: [protoDirectory()],
  };
}
