/**
 * The real apps (dist/apps/{api,scheduler,executor}/src/main.js) as child processes of the suite:
 * started with a deployment's environment, their output kept in a log file (and the last lines in
 * memory), stopped (SIGTERM), killed (SIGKILL), frozen (SIGSTOP) and woken (SIGCONT). An exit the
 * suite did not ask for is recorded: it is a crash.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './private-stack';
import { sleep, waitFor } from './wait';

export type AppName = 'api' | 'scheduler' | 'executor';

/** How an app process ended. */
export interface ExitRecord {
  readonly app: string;
  readonly code: number | null;
  readonly signal: string | null;
  readonly at: number;
  /** True when the suite stopped or killed it. */
  readonly expected: boolean;
  /** Its last lines of output. */
  readonly tail: string;
}

const PORT_VARIABLE: Record<AppName, string> = {
  api: 'TICKWORK_API_PORT',
  scheduler: 'TICKWORK_SCHEDULER_PORT',
  executor: 'TICKWORK_EXECUTOR_PORT',
};

/** One app process. Its instance id is `<name>-<port>`: a restart on the same port is the same instance. */
export class FaultApp {
  private readonly recent: string[] = [];
  private expectingExit = false;
  private readonly exited: Promise<ExitRecord>;
  exit: ExitRecord | undefined;
  readonly startedAt = Date.now();

  private constructor(
    readonly name: AppName,
    readonly port: number,
    readonly child: ChildProcess,
    private readonly logStream: WriteStream,
  ) {
    const collect = (chunk: Buffer) => {
      logStream.write(chunk);
      for (const line of chunk.toString('utf8').split('\n')) if (line) this.recent.push(line);
      if (this.recent.length > 400) this.recent.splice(0, this.recent.length - 300);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exit = {
          app: this.id,
          code,
          signal,
          at: Date.now(),
          expected: this.expectingExit,
          tail: this.tail(30),
        };
        logStream.end(`\n[faults] exited: code ${code}, signal ${signal}\n`);
        resolve(this.exit);
      }),
    );
  }

  /** Spawns `name` from dist/ with `env`, listening for health on `port`; its output goes to `<logDir>/<id>.log`. */
  static start(name: AppName, env: Record<string, string>, port: number, logDir: string): FaultApp {
    const entry = join(ROOT, 'dist', 'apps', name, 'src', 'main.js');
    if (!existsSync(entry)) throw new Error(`${entry} is missing: run npm run build`);
    const id = `${name}-${port}`;
    // The executor runs with the young generation infra/start gives it (docs/executor.md, Performance).
    const nodeArgs = name === 'executor' ? ['--max-semi-space-size=32'] : [];
    const child = spawn(process.execPath, [...nodeArgs, entry], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...env,
        [PORT_VARIABLE[name]]: String(port),
        TICKWORK_INSTANCE_ID: id,
        // An executor restarted on its port is the same static group member (docs/executor.md).
        ...(name === 'executor' ? { TICKWORK_EXECUTOR_MEMBER_NAME: id } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stream = createWriteStream(join(logDir, `${id}.log`), { flags: 'a' });
    stream.write(`\n[faults] started ${new Date().toISOString()} pid ${child.pid}\n`);
    return new FaultApp(name, port, child, stream);
  }

  get id(): string {
    return `${this.name}-${this.port}`;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  alive(): boolean {
    return this.exit === undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Waits for /health/ready to answer 200; fails at once if the process exits. */
  async ready(timeoutMs = 90_000): Promise<void> {
    await waitFor(
      `${this.id} to be ready`,
      async () => {
        if (this.exit)
          throw new Error(`${this.id} exited (${this.exit.code ?? this.exit.signal}):\n${this.tail()}`);
        const res = await fetch(`${this.url}/health/ready`, { signal: AbortSignal.timeout(2_000) }).catch(
          () => undefined,
        );
        return res?.status === 200 ? true : undefined;
      },
      timeoutMs,
      200,
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n--- ${this.id} output ---\n${this.tail()}`);
    });
    // An app that lost its port to another process exits right after start-up: ready was not ours.
    await sleep(300);
    if (this.exit) throw new Error(`${this.id} exited right after it answered ready:\n${this.tail()}`);
  }

  tail(lines = 40): string {
    return this.recent.slice(-lines).join('\n');
  }

  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves when the process is gone. */
  async stop(timeoutMs = 30_000): Promise<ExitRecord> {
    if (!this.alive()) return this.exited;
    this.expectingExit = true;
    this.child.kill('SIGCONT'); // a frozen process cannot handle SIGTERM
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const exit = await this.exited;
    clearTimeout(timer);
    return exit;
  }

  /** kill -9: no shutdown hook runs. */
  async kill(): Promise<ExitRecord> {
    if (!this.alive()) return this.exited;
    this.expectingExit = true;
    this.child.kill('SIGKILL');
    return this.exited;
  }

  signal(sig: 'SIGSTOP' | 'SIGCONT'): void {
    if (this.alive()) this.child.kill(sig);
  }
}
