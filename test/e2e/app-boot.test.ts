/**
 * Every file-based setting is read and validated at boot: a tenant registry (or TLS key) the app
 * cannot read, or that is invalid, stops the start of the real process with a message naming the
 * variable and the file, instead of failing the first request or schedule command it serves.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type AppName, type AppProcess } from '../support/apps';
import { testDatabase, type TestDatabase } from '../support/db';
import { freePort } from '../support/env';

/** A file in a fresh temp directory holding `text`. */
function tempFile(name: string, text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'tickwork-boot-')), name);
  writeFileSync(file, text);
  return file;
}

const missingTenants = () => join(tmpdir(), 'tickwork-no-such-tenants.yaml');
const brokenTenants = () => tempFile('tenants.yaml', 'tenants: [ { id: acme, roles: 12 ');
const tokenWithoutTenant = () =>
  tempFile('tenants.yaml', 'tokens:\n  - { name: ci, sha256: "00", role: tenant }\n');

describe('app boot', () => {
  let db: TestDatabase;
  let app: AppProcess | undefined;

  beforeAll(async () => {
    db = await testDatabase('appboot');
  });
  afterEach(async () => {
    await app?.kill();
    app = undefined;
  });
  afterAll(async () => db?.close());

  /** Starts `name` and says how it ended: `exited with <code>`, or `ready` (the bad file went unread). */
  async function outcomeOf(name: AppName, env: Record<string, string>): Promise<string> {
    const started = startApp(name, db.iso.env(env), await freePort());
    app = started;
    return Promise.race([
      new Promise<string>((resolve) => started.child.once('exit', (code) => resolve(`exited with ${code}`))),
      started.ready(30_000).then(
        () => 'ready',
        () => new Promise<string>(() => undefined),
      ),
    ]);
  }

  it.each([
    ['scheduler', 'a file that does not exist', missingTenants],
    ['scheduler', 'a file that is not YAML', brokenTenants],
    ['scheduler', 'a registry with an invalid token', tokenWithoutTenant],
    ['api', 'a file that does not exist', missingTenants],
    ['api', 'a registry with an invalid token', tokenWithoutTenant],
  ] as const)(
    'the %s refuses to start with %s in TICKWORK_TENANTS_FILE, naming the variable and the file',
    async (name, _what, file) => {
      const path = file();
      expect(await outcomeOf(name, { TICKWORK_TENANTS_FILE: path })).toBe('exited with 1');
      expect(app!.tail()).toContain('TICKWORK_TENANTS_FILE');
      expect(app!.tail()).toContain(path);
    },
    60_000,
  );

  it('the api refuses to start with a TLS key file that does not exist, naming the variable', async () => {
    const cert = tempFile('cert.pem', 'not a certificate');
    const key = join(tmpdir(), 'tickwork-no-such-key.pem');
    expect(await outcomeOf('api', { TICKWORK_TLS_CERT_FILE: cert, TICKWORK_TLS_KEY_FILE: key })).toBe(
      'exited with 1',
    );
    expect(app!.tail()).toContain('TICKWORK_TLS_KEY_FILE');
  }, 60_000);
});
