/**
 * Flow control between a Kafka consumer and the executor, per partition.
 *
 * The batch handler never does the work itself: it takes the batch, pauses its partition and
 * returns at once, so kafkajs keeps fetching the other partitions and heartbeating the group
 * however long a webhook takes (kafkajs waits for every batch of a fetch before fetching again,
 * so a handler that blocked would stall the whole broker's partitions behind one slow call, and
 * would hold up rebalances). The held batch is then run with bounded concurrency (the shared
 * Slots); a message that must wait — a retry before its not-before, a run leased elsewhere, an
 * infrastructure error — is parked on a timer without a slot. Offsets are marked processed in
 * order, only up to the first message not yet done; the partition is resumed when its whole batch
 * is done. Memory is bounded by one fetched batch per assigned partition: fetching stops while
 * the slots are full because every partition holding a batch stays paused.
 *
 * kafkajs keeps a partition's paused state across rebalances (whether or not it is still
 * assigned), so a partition that leaves the assignment is resumed at once and its batch dropped;
 * the new owner re-reads it from the committed offset, and the run ledger absorbs duplicates.
 */
import type { InboundBatch, InboundMessage } from '@tickwork/messaging';
import type { Slots } from './slots';

export type ProcessResult =
  | { readonly kind: 'done' }
  | { readonly kind: 'later'; readonly afterMs: number }
  | { readonly kind: 'abandon' };

/** Does the work for one message. */
export interface MessageProcessor {
  /** Epoch ms before which this message must not be processed (a retry's not-before), if any. */
  holdUntil?(message: InboundMessage): number | undefined;
  /** Processes one message; a throw is treated as a transient failure and retried with backoff. */
  process(message: InboundMessage, signal: AbortSignal): Promise<ProcessResult>;
  /**
   * Processes messages of one partition together, one result each (as `process` would give it),
   * each settling on its own. Absent: `process` for each.
   */
  processMany?(messages: readonly InboundMessage[], signal: AbortSignal): Promise<ProcessResult>[];
}

/** The consumer controls the flow needs (MessageConsumer has them). */
export interface FlowControl {
  pause(topic: string, partitions?: readonly number[]): void;
  resume(topic: string, partitions?: readonly number[]): void;
}

export interface FlowEvents {
  onError?(error: Error, message: InboundMessage, failures: number): void;
}

type EntryState = 'queued' | 'parked' | 'running' | 'done' | 'dropped';

interface Entry {
  readonly message: InboundMessage;
  state: EntryState;
  timer: NodeJS.Timeout | undefined;
  failures: number;
}

class PartitionWork {
  readonly entries: Entry[];
  readonly ready: Entry[] = [];
  resolved = 0;
  running = 0;
  waitingForSlot = false;
  /** Slots handed to this partition by a release and not used yet (see pump). */
  granted = 0;
  pumpScheduled = false;
  discarded = false;

  constructor(
    readonly key: string,
    readonly batch: InboundBatch,
  ) {
    this.entries = batch.messages.map((message) => ({
      message,
      state: 'queued',
      timer: undefined,
      failures: 0,
    }));
  }
}

const MAX_TIMER_MS = 2_147_483_647;
/** Messages handed to `processMany` at once, at most (each still takes a slot). */
const MAX_GROUP = 500;
const ERROR_BACKOFF_MS = { initial: 500, max: 30_000 };

export interface FlowStats {
  readonly partitionsHeld: number;
  readonly running: number;
  readonly parked: number;
}

export class PartitionFlow {
  private readonly work = new Map<string, PartitionWork>();
  private assigned: Set<string> | null = null;
  private suspended = false;
  private stopping = false;
  private running = 0;
  private parked = 0;
  private lastBatch: InboundBatch | undefined;
  private readonly abort = new AbortController();
  private idle: (() => void)[] = [];

  constructor(
    private readonly control: FlowControl,
    private readonly slots: Slots,
    private readonly processor: MessageProcessor,
    private readonly events: FlowEvents = {},
    private readonly now: () => number = Date.now,
  ) {}

  /** The consumer's batch handler: takes the batch, pauses the partition, returns at once; never throws. */
  async onBatch(batch: InboundBatch): Promise<void> {
    if (batch.messages.length === 0) return;
    // Paused even when stopping: an unacknowledged batch would otherwise be fetched again at once.
    this.control.pause(batch.topic, [batch.partition]);
    if (this.stopping) return;
    this.lastBatch = batch;
    const key = keyOf(batch.topic, batch.partition);
    // Still working on an earlier batch of this partition (kafkajs restarted its fetcher): ignore
    // this one; its messages are fetched again once the earlier batch is done and we resume.
    if (this.work.has(key)) return;
    const w = new PartitionWork(key, batch);
    this.work.set(key, w);
    for (const e of w.entries) this.route(w, e);
    this.pump(w);
  }

  /** The group started a rebalance: stop marking offsets until the new assignment is known. */
  onRebalance(): void {
    this.suspended = true;
  }

  /** The new assignment (all topics): drop the work of partitions that left it and resume them. */
  onAssignment(assignment: ReadonlyMap<string, readonly number[]>): void {
    const keys = new Set<string>();
    for (const [topic, partitions] of assignment) for (const p of partitions) keys.add(keyOf(topic, p));
    for (const w of [...this.work.values()]) {
      if (keys.has(w.key)) continue;
      this.discard(w);
      this.control.resume(w.batch.topic, [w.batch.partition]);
    }
    this.assigned = keys;
    this.suspended = false;
    for (const w of [...this.work.values()]) {
      this.markResolved(w);
      this.pump(w);
    }
  }

  /**
   * Stops taking work: parked messages are dropped (they are re-delivered to whoever owns the
   * partition next), running ones get `drainMs` to finish, then are aborted; what finished is
   * marked processed and committed.
   */
  async stop(drainMs: number): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    for (const w of this.work.values()) for (const e of w.entries) this.unpark(e, 'dropped');
    if (!(await this.waitIdle(drainMs))) {
      this.abort.abort();
      await this.waitIdle(10_000);
    }
    if (!this.suspended) await this.lastBatch?.commit({ force: true }).catch(() => undefined);
  }

  /** What the flow holds right now. */
  stats(): FlowStats {
    return { partitionsHeld: this.work.size, running: this.running, parked: this.parked };
  }

  private route(w: PartitionWork, e: Entry): void {
    const hold = this.processor.holdUntil?.(e.message);
    const wait = hold === undefined ? 0 : hold - this.now();
    if (wait > 0) this.park(w, e, wait);
    else w.ready.push(e);
  }

  private park(w: PartitionWork, e: Entry, ms: number): void {
    e.state = 'parked';
    this.parked++;
    e.timer = setTimeout(
      () => {
        e.timer = undefined;
        this.parked--;
        if (w.discarded || this.stopping) {
          e.state = 'dropped';
          return;
        }
        e.state = 'queued';
        w.ready.push(e);
        this.pump(w);
      },
      Math.min(Math.max(0, ms), MAX_TIMER_MS),
    );
  }

  private unpark(e: Entry, to: EntryState): void {
    if (e.state !== 'parked' || !e.timer) return;
    clearTimeout(e.timer);
    e.timer = undefined;
    e.state = to;
    this.parked--;
  }

  private pump(w: PartitionWork): void {
    // No new work while a rebalance may be taking partitions away; the assignment pumps again.
    while (w.ready.length > 0 && !w.discarded && !this.stopping && !this.suspended) {
      if (this.processor.processMany && w.ready.length > 1) {
        let n = 0;
        while (n < w.ready.length && n < MAX_GROUP && this.takeSlot(w)) n++;
        if (n > 0) {
          this.runMany(w, w.ready.splice(0, n));
          continue;
        }
      }
      if (!this.takeSlot(w)) {
        if (!w.waitingForSlot) {
          w.waitingForSlot = true;
          this.slots.whenFree(() => {
            w.waitingForSlot = false;
            if (w.discarded || this.stopping || this.suspended || w.ready.length === 0) {
              this.slots.release();
              return;
            }
            if (this.processor.processMany) {
              // Slots free up many at a time (a group settles together): keep this one and pump
              // once they have, so the freed slots go out as a group, not one message each.
              w.granted++;
              if (!w.pumpScheduled) {
                w.pumpScheduled = true;
                setImmediate(() => {
                  w.pumpScheduled = false;
                  this.pump(w);
                });
              }
              return;
            }
            const e = w.ready.shift()!;
            this.run(w, e);
            this.pump(w);
          });
        }
        return;
      }
      this.run(w, w.ready.shift()!);
    }
    // Nothing (more) to run here: slots kept for this partition go back.
    for (; w.granted > 0; w.granted--) this.slots.release();
  }

  /** A slot for `w`: one kept for it (granted), else a free one. */
  private takeSlot(w: PartitionWork): boolean {
    if (w.granted > 0) {
      w.granted--;
      return true;
    }
    return this.slots.tryAcquire();
  }

  /** Runs one message holding a slot already taken for it. */
  private run(w: PartitionWork, e: Entry): void {
    this.settleWhenDone(w, e, this.processor.process(e.message, this.abort.signal));
  }

  /** Runs messages together (processMany), each holding a slot already taken for it. */
  private runMany(w: PartitionWork, entries: readonly Entry[]): void {
    let results: Promise<ProcessResult>[];
    try {
      results = this.processor.processMany!(
        entries.map((e) => e.message),
        this.abort.signal,
      );
    } catch (err) {
      results = entries.map(() => Promise.reject(err));
    }
    entries.forEach((e, i) => this.settleWhenDone(w, e, results[i]!));
  }

  /** Marks `e` running; when `processing` settles, frees its slot and resolves, parks or drops it. */
  private settleWhenDone(w: PartitionWork, e: Entry, processing: Promise<ProcessResult>): void {
    e.state = 'running';
    w.running++;
    this.running++;
    processing
      .catch((err: unknown): ProcessResult => {
        e.failures++;
        this.events.onError?.(err as Error, e.message, e.failures);
        const backoff = Math.min(ERROR_BACKOFF_MS.max, ERROR_BACKOFF_MS.initial * 2 ** (e.failures - 1));
        return { kind: 'later', afterMs: backoff / 2 + Math.random() * (backoff / 2) };
      })
      .then((r) => {
        this.slots.release();
        w.running--;
        this.running--;
        if (r.kind === 'done') {
          e.state = 'done';
          this.markResolved(w);
        } else if (r.kind === 'later' && !this.stopping && !w.discarded) {
          this.park(w, e, r.afterMs);
        } else {
          e.state = 'dropped';
        }
        this.finishIfDone(w);
        if (this.running === 0) this.notifyIdle();
      })
      .catch((err: unknown) => this.events.onError?.(err as Error, e.message, e.failures));
  }

  /** Marks processed every offset up to the first message of the batch not yet done. */
  private markResolved(w: PartitionWork): void {
    let i = w.resolved;
    while (i < w.entries.length && w.entries[i]!.state === 'done') i++;
    if (i > w.resolved) w.resolved = i;
    if (w.resolved === 0 || w.discarded || this.suspended) return;
    if (this.assigned && !this.assigned.has(w.key)) return;
    try {
      w.batch.markProcessed(w.entries[w.resolved - 1]!.message.offset);
    } catch {
      // The consumer moved on (restarted or reassigned): the next owner re-reads from the commit.
    }
  }

  private finishIfDone(w: PartitionWork): void {
    if (w.discarded || this.stopping || w.resolved < w.entries.length) return;
    this.work.delete(w.key);
    void w.batch.commit().catch(() => undefined);
    this.control.resume(w.batch.topic, [w.batch.partition]);
  }

  private discard(w: PartitionWork): void {
    w.discarded = true;
    for (const e of w.entries) this.unpark(e, 'dropped');
    w.ready.length = 0;
    this.work.delete(w.key);
  }

  private waitIdle(ms: number): Promise<boolean> {
    if (this.running === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.idle.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  private notifyIdle(): void {
    const waiters = this.idle;
    this.idle = [];
    for (const w of waiters) w();
  }
}

function keyOf(topic: string, partition: number): string {
  return `${topic}|${partition}`;
}
