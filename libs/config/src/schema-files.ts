/** Where the schema files shipped with Tickwork (schemas/avro, schemas/proto) are at run time. */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Finds `schemas/<kind>` above this file, wherever it was compiled to (src, dist, a container). */
export function schemaDirectory(kind: 'avro' | 'proto' | 'openapi'): string {
  let dir = __dirname;
  for (let i = 0; i < 8; i++) {
    const candidate = join(dir, 'schemas', kind);
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error(`schemas/${kind} not found above ${__dirname}`);
}
