/**
 * The committed schema dump (libs/store/schema.sql) is what the migrations produce: a fresh
 * database, migrated, dumps to exactly that file. A migration added or changed without
 * `npm run schema:dump` fails here, so every schema change shows as a diff of schema.sql in review.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { dumpSchema, normaliseSchemaDump, SCHEMA_DUMP_PATH } from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';

const COMMITTED = path.resolve(__dirname, '../..', SCHEMA_DUMP_PATH);

describe('schema dump', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase('schema-dump');
  });
  afterAll(() => db?.close());

  it('matches the committed libs/store/schema.sql (regenerate with npm run schema:dump)', async () => {
    const fresh = await dumpSchema(db.iso.databaseUrl);
    const committed = readFileSync(COMMITTED, 'utf8');
    if (fresh !== committed) {
      // The first differing line, then the whole diff from jest.
      const a = committed.split('\n');
      const b = fresh.split('\n');
      const at = a.findIndex((line, i) => line !== b[i]);
      throw new Error(
        `${SCHEMA_DUMP_PATH} is not what the migrations produce (first difference at line ${at + 1}: ` +
          `committed ${JSON.stringify(a[at])}, migrated ${JSON.stringify(b[at])}): run npm run schema:dump`,
      );
    }
    expect(fresh).toContain('CREATE TABLE public.jobs (');
  });

  it('keeps out what varies with the server, pg_dump and the run', () => {
    const raw = [
      '--',
      '-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)',
      '-- Dumped by pg_dump version 15.20',
      '\\restrict AbCdEf0123',
      'SET statement_timeout = 0;',
      "SELECT pg_catalog.set_config('search_path', '', false);",
      '',
      '',
      '',
      'CREATE TABLE public.t (',
      '    id bigint NOT NULL   ',
      ');',
      '\\unrestrict AbCdEf0123',
    ].join('\n');
    const out = normaliseSchemaDump(raw);
    expect(out).not.toMatch(/Dumped|restrict|SET statement_timeout|set_config/);
    expect(out).not.toMatch(/\n\n\n/);
    expect(out.endsWith('CREATE TABLE public.t (\n    id bigint NOT NULL\n);\n')).toBe(true);
  });
});
