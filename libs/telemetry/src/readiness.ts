/**
 * Readiness: named checks (PostgreSQL, Kafka, shard ownership, …) run together with a timeout each,
 * their result cached briefly so probes from several load balancers do not multiply the work. The
 * HTTP /health/ready endpoint and the gRPC health service read the same result.
 */

/** A check passes by resolving; it fails by throwing (its message says why) or by timing out. */
export type ReadinessCheck = () => Promise<void> | void;

export interface ReadinessReport {
  readonly ready: boolean;
  /** Each check: "up", or "down: <why>". */
  readonly checks: Readonly<Record<string, string>>;
}

/** The readiness of one process: its checks, run together, the result cached for `cacheMs`. */
export class Readiness {
  private cached: { at: number; report: Promise<ReadinessReport> } | undefined;

  constructor(
    private readonly checks: Readonly<Record<string, ReadinessCheck>>,
    private readonly opts: { readonly timeoutMs?: number; readonly cacheMs?: number } = {},
  ) {}

  /** Runs every check (or returns the result of a run less than cacheMs old). */
  report(): Promise<ReadinessReport> {
    const now = Date.now();
    if (this.cached && now - this.cached.at < (this.opts.cacheMs ?? 1_000)) return this.cached.report;
    const report = this.run();
    this.cached = { at: now, report };
    return report;
  }

  private async run(): Promise<ReadinessReport> {
    const timeoutMs = this.opts.timeoutMs ?? 2_000;
    const entries = await Promise.all(
      Object.entries(this.checks).map(async ([name, check]): Promise<[string, string]> => {
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([
            Promise.resolve().then(check),
            new Promise<never>((_, reject) => {
              timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
            }),
          ]);
          return [name, 'up'];
        } catch (e) {
          return [name, `down: ${e instanceof Error ? e.message : String(e)}`];
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    const checks = Object.fromEntries(entries);
    return { ready: entries.every(([, v]) => v === 'up'), checks };
  }
}
