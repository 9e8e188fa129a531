/** Where the .proto files are, and the loader options every Tickwork gRPC server and client uses. */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Finds the repository's schemas/proto folder from wherever this file was compiled to. */
export function protoDirectory(): string {
  let dir = __dirname;
  for (let i = 0; i < 8; i++) {
    const candidate = join(dir, 'schemas', 'proto');
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error(`schemas/proto not found above ${__dirname}`);
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
