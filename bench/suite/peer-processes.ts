/**
 * The two worker processes every peer gets: forked from this suite's own build, each running one
 * system's worker (peer-worker.ts), reporting executions back over IPC in small batches.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { NamedProcess } from './contender';
import type { Execution } from './lateness';

/** Sent by a worker process: 'ready', or a batch of [run, index, latenessMs, startedAt]. */
export type WorkerMessage = { ready: true } | { executions: [number, number, number, number][] };

export class PeerProcesses {
  private children: ChildProcess[] = [];

  constructor(
    private readonly system: string,
    /** Settings passed to each worker (JSON), e.g. concurrency and polling. */
    private readonly options: object,
  ) {}

  async start(sink: (e: Execution) => void, count = 2): Promise<void> {
    const entry = join(__dirname, 'peer-worker.js');
    this.children = Array.from({ length: count }, (_, n) =>
      fork(entry, [this.system, JSON.stringify({ ...this.options, workerNumber: n })], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    await Promise.all(
      this.children.map(
        (child) =>
          new Promise<void>((resolve, reject) => {
            child.once('exit', (code) => reject(new Error(`${this.system} worker exited (${code})`)));
            child.on('message', (m: WorkerMessage) => {
              if ('ready' in m) resolve();
              else
                for (const [run, index, latenessMs, startedAt] of m.executions)
                  sink({ run, index, latenessMs, startedAt });
            });
          }),
      ),
    );
  }

  processes(): NamedProcess[] {
    return this.children.map((c, n) => ({ name: `${this.system} worker ${n + 1}`, pid: c.pid! }));
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.removeAllListeners('exit');
            const kill = setTimeout(() => c.kill('SIGKILL'), 5_000);
            c.once('exit', () => {
              clearTimeout(kill);
              resolve();
            });
            c.kill('SIGTERM');
          }),
      ),
    );
    this.children = [];
  }
}
