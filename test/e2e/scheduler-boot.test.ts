/**
 * The scheduler reads its tenant registry at boot: a registry it cannot read or that is invalid
 * stops the start with a message naming the variable, instead of failing the first schedule
 * command it consumes (or the first tick that applies a tenant's fire-rate cap).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type AppProcess } from '../support/apps';
import { testDatabase, type TestDatabase } from '../support/db';
import { freePort } from '../support/env';

describe('scheduler boot', () => {
  let db: TestDatabase;
  let scheduler: AppProcess | undefined;

  beforeAll(async () => {
    db = await testDatabase('schedboot');
  });
  afterEach(async () => {
    await scheduler?.kill();
    scheduler = undefined;
  });
  afterAll(async () => db?.close());

  it.each([
    ['a file that does not exist', () => join(tmpdir(), 'tickwork-no-such-tenants.yaml')],
    [
      'a file that is not a registry',
      () => {
        const file = join(mkdtempSync(join(tmpdir(), 'tickwork-tenants-')), 'tenants.yaml');
        writeFileSync(file, 'tenants: [ { id: acme, roles: 12 ');
        return file;
      },
    ],
  ])(
    'refuses to start with %s in TICKWORK_TENANTS_FILE, naming the variable',
    async (_what, file) => {
      const app = startApp('scheduler', db.iso.env({ TICKWORK_TENANTS_FILE: file() }), await freePort());
      scheduler = app;
      // It exits on its own; found ready instead (the registry read lazily), the test fails.
      const outcome = await Promise.race([
        new Promise<string>((resolve) => app.child.once('exit', (code) => resolve(`exited with ${code}`))),
        app.ready(30_000).then(
          () => 'ready',
          () => new Promise<string>(() => undefined),
        ),
      ]);
      expect(outcome).toBe('exited with 1');
      expect(app.tail()).toContain('TICKWORK_TENANTS_FILE');
    },
    60_000,
  );
});
