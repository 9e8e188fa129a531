/** Starts the real app processes (built into dist/) for a test, and stops or kills them. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, freePort } from './env';

export type AppName = 'api' | 'scheduler' | 'executor';

const ROOT = join(__dirname, '..', '..');

export class AppProcess {
  readonly output: string[] = [];
  private exited: Promise<number | null>;

  constructor(
    readonly name: AppName,
    readonly child: ChildProcess,
    readonly port: number,
  ) {
    const collect = (chunk: Buffer) =>
      this.output.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l.length > 0),
      );
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Waits for /health/ready to answer 200. */
  async ready(timeoutMs = 60_000): Promise<void> {
    let exitCode: number | null | undefined;
    void this.exited.then((c) => (exitCode = c));
    await eventually(
      `${this.name} to be ready`,
      async () => {
        if (exitCode !== undefined) throw new Error(`${this.name} exited with ${exitCode}:\n${this.tail()}`);
        const res = await fetch(`${this.url}/health/ready`).catch(() => undefined);
        return res?.status === 200 ? true : undefined;
      },
      timeoutMs,
      200,
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n--- ${this.name} output ---\n${this.tail()}`);
    });
  }

  tail(lines = 40): string {
    return this.output.slice(-lines).join('\n');
  }

  /** SIGTERM and wait for a clean exit. */
  async stop(timeoutMs = 15_000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** kill -9: no shutdown hooks run. */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  signal(sig: 'SIGSTOP' | 'SIGCONT'): void {
    this.child.kill(sig);
  }
}

/** Spawns an app from dist/ with the given environment (npm test builds dist first). */
export function startApp(name: AppName, env: Record<string, string>, port: number): AppProcess {
  // TICKWORK_TEST_DIST lets a developer point the tests at another build output than dist/.
  const entry = join(process.env.TICKWORK_TEST_DIST ?? join(ROOT, 'dist'), 'apps', name, 'src', 'main.js');
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run npm run build (npm test does)`);
  const portVar = {
    api: 'TICKWORK_API_PORT',
    scheduler: 'TICKWORK_SCHEDULER_PORT',
    executor: 'TICKWORK_EXECUTOR_PORT',
  }[name];
  const child = spawn(process.execPath, [entry], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      // A test that does not ask for a gRPC port gets an ephemeral one, so parallel APIs never collide.
      ...(name === 'api' ? { TICKWORK_GRPC_PORT: '0' } : {}),
      ...env,
      [portVar]: String(port),
      TICKWORK_INSTANCE_ID: `${name}-${port}`,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new AppProcess(name, child, port);
}

/**
 * The whole pipeline on one environment: an api (ready first), then a scheduler and an executor,
 * each on a free port; `all` lists the three for stopping.
 */
export async function startPipeline(
  env: Record<string, string>,
): Promise<{ api: AppProcess; scheduler: AppProcess; executor: AppProcess; all: AppProcess[] }> {
  const api = startApp('api', env, await freePort());
  await api.ready();
  const scheduler = startApp('scheduler', env, await freePort());
  const executor = startApp('executor', env, await freePort());
  const all = [api, scheduler, executor];
  await Promise.all([scheduler.ready(), executor.ready()]);
  return { api, scheduler, executor, all };
}
