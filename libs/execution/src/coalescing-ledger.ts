/**
 * Groups the ledger calls every fire makes (begin and complete, or for a Kafka target's first
 * attempt the unleased check and record), and the lease heartbeats of long calls, across
 * concurrent fires into one statement each, so PostgreSQL sees a few statements per batch
 * instead of one or two per fire. Calls made in the same turn of the event
 * loop go together; while `maxInFlight` statements are running, new calls wait and join the next
 * one, so batches grow with load by themselves.
 */
import type { FireEvent, FireKey, RecordedRun, RunCompletion, RunStart, UnleasedRun } from '@tickwork/domain';
import type { RunLedger } from './run-ledger';

/** The batch forms of the ledger writes (RunRepository has them). */
export interface BatchRunStore extends RunLedger {
  beginRuns(
    fires: readonly FireEvent[],
    owner: string,
    leaseMs: number,
    leaseTokens?: readonly (string | undefined)[],
  ): Promise<RunStart[]>;
  completeRuns(
    items: readonly { readonly key: FireKey; readonly leaseToken: string; readonly outcome: RunCompletion }[],
  ): Promise<(RecordedRun | null)[]>;
  heartbeats(
    items: readonly { readonly key: FireKey; readonly leaseToken: string; readonly leaseMs: number }[],
  ): Promise<boolean[]>;
  mayRunUnleasedMany(keys: readonly FireKey[]): Promise<boolean[]>;
  recordUnleasedRuns(runs: readonly UnleasedRun[]): Promise<(RecordedRun | null)[]>;
}

/** Collects submitted items and runs them through `run` in batches; each caller gets its own result. */
export class Coalescer<I, O> {
  // A caller's items stay together in one batch (submitMany), so a batch may exceed maxBatch by
  // one caller's items less one.
  private queue: { items: readonly I[]; resolve(o: O[]): void; reject(e: unknown): void }[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly opts: { readonly maxBatch: number; readonly maxInFlight: number },
  ) {}

  /** Resolves with this item's result once its batch ran. */
  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ items: [item], resolve: (o) => resolve(o[0]!), reject });
      this.schedule();
    });
  }

  /** Resolves with these items' results, in order, once their batch ran (all in the same one). */
  submitMany(items: readonly I[]): Promise<O[]> {
    if (items.length === 0) return Promise.resolve([]);
    return new Promise<O[]>((resolve, reject) => {
      this.queue.push({ items, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.queue.length === 0 || this.inFlight >= this.opts.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.queue.length > 0 && this.inFlight < this.opts.maxInFlight) {
      let n = 0;
      let size = 0;
      while (n < this.queue.length && (n === 0 || size + this.queue[n]!.items.length <= this.opts.maxBatch)) {
        size += this.queue[n]!.items.length;
        n++;
      }
      const batch = this.queue.splice(0, n);
      const items: I[] = [];
      for (const b of batch) for (const item of b.items) items.push(item);
      this.inFlight++;
      this.run(items)
        .then(
          (results) => {
            let at = 0;
            for (const b of batch) {
              b.resolve(results.slice(at, at + b.items.length));
              at += b.items.length;
            }
          },
          (e: unknown) => batch.forEach((b) => b.reject(e)),
        )
        .finally(() => {
          this.inFlight--;
          this.schedule();
        });
    }
  }
}

/** A RunLedger whose begin and complete writes are batched across concurrent fires. */
export class CoalescingLedger implements RunLedger {
  private readonly begins: Coalescer<{ fire: FireEvent; leaseToken: string | undefined }, RunStart>;
  private readonly completes: Coalescer<
    { key: FireKey; leaseToken: string; outcome: RunCompletion },
    RecordedRun | null
  >;
  private readonly heartbeats: Coalescer<{ key: FireKey; leaseToken: string; leaseMs: number }, boolean>;
  private readonly unleasedChecks: Coalescer<FireKey, boolean>;
  private readonly unleasedRecords: Coalescer<UnleasedRun, RecordedRun | null>;
  private recordOwner: string | undefined;
  private beginOwner: { owner: string; leaseMs: number } | undefined;

  constructor(
    private readonly store: BatchRunStore,
    opts: { readonly maxBatch?: number; readonly maxInFlight?: number } = {},
  ) {
    const o = { maxBatch: opts.maxBatch ?? 500, maxInFlight: opts.maxInFlight ?? 4 };
    this.begins = new Coalescer(
      (items) =>
        this.store.beginRuns(
          items.map((x) => x.fire),
          this.beginOwner!.owner,
          this.beginOwner!.leaseMs,
          items.map((x) => x.leaseToken),
        ),
      o,
    );
    this.completes = new Coalescer((items) => this.store.completeRuns(items), o);
    this.unleasedChecks = new Coalescer((keys) => this.store.mayRunUnleasedMany(keys), o);
    this.unleasedRecords = new Coalescer((runs) => this.store.recordUnleasedRuns(runs), o);
    // Heartbeats are few per second and not urgent: one statement at a time, the rest batch up.
    this.heartbeats = new Coalescer((items) => this.store.heartbeats(items), {
      maxBatch: o.maxBatch,
      maxInFlight: 1,
    });
  }

  /** Batched beginRun; every caller of one ledger must pass the same owner and lease length. */
  beginRun(fire: FireEvent, owner: string, leaseMs: number, leaseToken?: string): Promise<RunStart> {
    if (this.beginOwner && (this.beginOwner.owner !== owner || this.beginOwner.leaseMs !== leaseMs)) {
      return this.store.beginRun(fire, owner, leaseMs, leaseToken);
    }
    this.beginOwner = { owner, leaseMs };
    return this.begins.submit({ fire, leaseToken });
  }

  /** Batched completeRun. */
  completeRun(key: FireKey, leaseToken: string, outcome: RunCompletion): Promise<RecordedRun | null> {
    return this.completes.submit({ key, leaseToken, outcome });
  }

  /** Batched heartbeat. */
  heartbeat(key: FireKey, leaseToken: string, leaseMs: number): Promise<boolean> {
    return this.heartbeats.submit({ key, leaseToken, leaseMs });
  }

  /** Batched mayRunUnleased. */
  mayRunUnleased(key: FireKey): Promise<boolean> {
    return this.unleasedChecks.submit(key);
  }

  /** Batched recordUnleasedRun; every caller of one ledger must pass the same owner. */
  recordUnleasedRun(run: UnleasedRun): Promise<RecordedRun | null> {
    if (this.recordOwner !== undefined && this.recordOwner !== run.owner)
      return this.store.recordUnleasedRun(run);
    this.recordOwner = run.owner;
    return this.unleasedRecords.submit(run);
  }

  /** mayRunUnleased of several fires, in the same statement as other callers' checks. */
  mayRunUnleasedMany(keys: readonly FireKey[]): Promise<boolean[]> {
    return this.unleasedChecks.submitMany(keys);
  }

  /** recordUnleasedRun of several runs (one owner), in the same insert as other callers' runs. */
  recordUnleasedRuns(runs: readonly UnleasedRun[]): Promise<(RecordedRun | null)[]> {
    const owner = runs[0]?.owner;
    if (owner === undefined) return Promise.resolve([]);
    if ((this.recordOwner !== undefined && this.recordOwner !== owner) || runs.some((r) => r.owner !== owner))
      return this.store.recordUnleasedRuns(runs);
    this.recordOwner = owner;
    return this.unleasedRecords.submitMany(runs);
  }

  markHandedOff(key: FireKey, status: 'RETRYING' | 'DEAD_LETTERED', attempt: number): Promise<void> {
    return this.store.markHandedOff(key, status, attempt);
  }

  releaseRun(key: FireKey, leaseToken: string): Promise<void> {
    return this.store.releaseRun(key, leaseToken);
  }

  isUnavailable(error: unknown): boolean {
    return this.store.isUnavailable(error);
  }
}
