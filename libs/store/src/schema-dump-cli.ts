/** `npm run schema:dump`: rewrites libs/store/schema.sql from a freshly migrated database. */
import { writeFileSync } from 'node:fs';
import { loadConfig } from '@tickwork/config';
import { dumpFreshSchema, SCHEMA_DUMP_PATH } from './schema-dump';

async function main(): Promise<void> {
  const schema = await dumpFreshSchema(loadConfig().databaseUrl, `schema_dump_${process.pid}`);
  // npm runs scripts from the repository root.
  writeFileSync(SCHEMA_DUMP_PATH, schema);
  console.log(`wrote ${SCHEMA_DUMP_PATH} (${schema.split('\n').length} lines)`);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
