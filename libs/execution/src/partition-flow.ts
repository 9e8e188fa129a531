/**
 * Flow control between a Kafka consumer and the executor, per partition.
 *
 * The batch handler never does the work itself: it takes the batch and returns at once, so
 * kafkajs keeps fetching and heartbeating the group however long a webhook takes. The consumer
 * must fetch ahead (`ConsumerOptions.fetchAhead`): its fetch position moves past every batch
 * handed over, and it commits only what the flow marked processed.
 *
 * So a slow message holds up nobody else: a partition keeps several fetched batches, in offset
 * order, and is fetched on while its earlier messages are still in flight. What is done is marked
 * processed only up to the partition's oldest unfinished message, so the commit never passes a
 * message that is not done. A message that is done lets go of its bytes and keeps only a small
 * record of its place until the messages before it are done too. Fetching a partition stops (it
 * is paused) while what it holds from its oldest unfinished message on reaches `maxHeldBytes`
 * (the memory bound), or while any of its messages waits for a delivery slot (the concurrency
 * bound: a backlog waits in Kafka, not here), and resumes below both.
 *
 * Messages are handed to the processor with bounded concurrency (the shared Slots). Within a
 * partition, fires on time start in partition order and a backlog most overdue first (each job
 * keeping its partition order). Across partitions they start in order of due time (the `tickwork-due-at` header, else the
 * message's timestamp): the batches one fetch brings are merged by due time into the free slots,
 * and a partition waiting for a slot waits with the due time of its next message, so after an
 * outage the most overdue fires of all partitions start first. After an assignment, an overdue
 * batch waits (at most `backlogSettleMs`) for the first batches of the other partitions that have
 * messages waiting, so a backlog the partitions hand over one fetch apart still starts in due
 * order. A message that must wait — a retry before its not-before, a run leased elsewhere, an
 * infrastructure error — is parked on a timer without a slot, and the messages after it go on.
 * Per job (the message key), fires start in partition order: one of a job that is parked before
 * its first start holds the later ones of the same job, and only those. Once started, fires of one
 * job may be in flight together (as they always could within a batch); the job's overlap policy
 * decides at claim time whether they are fired at all.
 *
 * kafkajs keeps a partition's paused state across rebalances (whether or not it is still
 * assigned), so a partition that leaves the assignment is resumed at once and its work dropped;
 * the new owner re-reads it from the committed offset, and the run ledger absorbs duplicates.
 */
import { systemClock, type Clock, type ClockTimer } from '@tickwork/domain';
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
   * Processes messages together (of one partition, or of several in due order), one result each
   * (as `process` would give it), each settling on its own. Absent: `process` for each.
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

export interface FlowOptions {
  /** Bytes (estimated) a partition may hold from its oldest unfinished message on before it stops fetching. */
  readonly maxHeldBytes?: number;
  /**
   * After an assignment, how long a backlog (overdue fires) may wait for the first batches of the
   * other partitions that have messages waiting (see `expectBacklog`), so that it starts in due
   * order across them; 0 = it starts as it comes (default).
   */
  readonly backlogSettleMs?: number;
  /** The flow's time and timers (parked deliveries, the backlog settle, the drain); default the system clock. */
  readonly clock?: Clock;
  /** The current time only (overrides the clock's `now`). */
  readonly now?: () => number;
}

type EntryState = 'queued' | 'blocked' | 'parked' | 'running' | 'done' | 'dropped';

interface Entry {
  /** The message until it is done (then let go: only its place is kept). */
  message: InboundMessage | null;
  readonly offset: string;
  readonly chunk: Chunk;
  state: EntryState;
  /** Handed to the processor at least once (per-job start order). */
  started: boolean;
  timer: ClockTimer | undefined;
  failures: number;
  /** The message key as a string, once per-job order needed it. */
  job: string | undefined;
  /** The next message of the same job, blocked until this one is queued to start. */
  successor: Entry | undefined;
  /** When the fire came due (epoch ms): slots go to the most overdue first. */
  readonly due: number;
}

/** One fetched batch's messages, in offset order; `resolved` of them (a prefix) are done. */
interface Chunk {
  entries: Entry[];
  resolved: number;
  /** Bytes of its keys and values: held (the consumer's copy of them) while any is unfinished. */
  payload: number;
  unfinished: number;
}

class PartitionWork {
  /** Held batches in offset order; a batch leaves once all its messages are done. */
  readonly chunks: Chunk[] = [];
  readonly ready: Entry[] = [];
  /** The offset after the last message taken: messages fetched again below it are held already. */
  next = 0;
  /** The last message resolved (it and all before it are done), and whether it is to be marked. */
  resolvedOffset = '';
  markDue = false;
  /** The latest batch: marks go through it (a mark covers the whole partition). */
  batch: InboundBatch | undefined;
  /** Messages held from the oldest unfinished one on, and what they cost (estimated bytes). */
  held = 0;
  heldBytes = 0;
  running = 0;
  /** Paused by this flow (held at its bound, or waiting for slots). */
  paused = false;
  waitingForSlot = false;
  /** Slots handed to this partition by a release and not used yet (see pump). */
  granted = 0;
  discarded = false;
  /**
   * Per job, the latest message not started yet that is parked or blocked: a later message of
   * that job waits behind it. Made only once a message is parked before its first start.
   */
  waiting: Map<string, Entry> | undefined;

  constructor(
    readonly key: string,
    readonly topic: string,
    readonly partition: number,
  ) {}
}

const MAX_TIMER_MS = 2_147_483_647;
/** Messages handed to `processMany` at once, at most (each still takes a slot). */
const MAX_GROUP = 500;
const ERROR_BACKOFF_MS = { initial: 500, max: 30_000 };
/**
 * What a held message costs (estimates; measured on Node 20): one not done yet, beyond its key and
 * value, ~760 bytes of heap (its message and entry objects, a fire's three headers, the buffer
 * views); one done, waiting for the messages before it, ~100 (its entry). The key and value bytes
 * count per batch, while any of its messages is unfinished (they share one buffer).
 */
const UNFINISHED_BYTES = 768;
const DONE_BYTES = 100;
const DEFAULT_MAX_HELD_BYTES = 2 * 1024 * 1024;
/** A batch whose first fire is overdue by this much is a backlog: merged with the others by due time. */
const BACKLOG_AGE_MS = 1_000;

export interface FlowStats {
  /** Partitions holding messages. */
  readonly partitionsHeld: number;
  /** Partitions this flow paused: at their memory bound or waiting for slots. */
  readonly partitionsPaused: number;
  readonly running: number;
  readonly parked: number;
  /** Messages held from each partition's oldest unfinished one on, and their bytes (estimated). */
  readonly held: number;
  readonly heldBytes: number;
  /** The most bytes one partition holds. */
  readonly maxPartitionHeldBytes: number;
}

export class PartitionFlow {
  private readonly work = new Map<string, PartitionWork>();
  private assigned: Set<string> | null = null;
  private suspended = false;
  private stopping = false;
  private draining = false;
  private running = 0;
  private parked = 0;
  private lastBatch: InboundBatch | undefined;
  /** Partitions given a batch since the last dispatch: started together, merged by due time. */
  private readonly fresh = new Set<PartitionWork>();
  private dispatchScheduled = false;
  private readonly abort = new AbortController();
  private idle: (() => void)[] = [];
  private readonly maxHeldBytes: number;
  private readonly backlogSettleMs: number;
  private readonly now: () => number;
  private readonly clock: Clock;
  /**
   * While an assignment's backlog settles: the partitions with messages waiting whose first batch
   * has not come yet (null until `expectBacklog` says which), the partitions heard from, and the
   * overdue work held meanwhile. See `onAssignment`.
   */
  private settle:
    | {
        pending: Set<string> | null;
        readonly heard: Set<string>;
        readonly held: Set<PartitionWork>;
        readonly timer: ClockTimer;
      }
    | undefined;

  constructor(
    private readonly control: FlowControl,
    private readonly slots: Slots,
    private readonly processor: MessageProcessor,
    private readonly events: FlowEvents = {},
    opts: FlowOptions = {},
  ) {
    this.maxHeldBytes = opts.maxHeldBytes ?? DEFAULT_MAX_HELD_BYTES;
    this.backlogSettleMs = opts.backlogSettleMs ?? 0;
    this.clock = opts.clock ?? systemClock;
    const clock = this.clock;
    this.now = opts.now ?? (() => clock.now());
  }

  /** The consumer's batch handler: takes the batch and returns at once; never throws. */
  async onBatch(batch: InboundBatch): Promise<void> {
    const messages = batch.messages;
    if (messages.length === 0) return;
    if (this.stopping) {
      // Nothing more is taken: stop fetching (nothing of it is marked, so it is re-delivered).
      this.control.pause(batch.topic, [batch.partition]);
      return;
    }
    this.lastBatch = batch;
    const key = keyOf(batch.topic, batch.partition);
    if (this.settle) this.heardFrom(key);
    let w = this.work.get(key);
    let from = 0;
    if (w) {
      // After a rebalance that left the partition here, kafkajs fetches again from the commit:
      // what is below `next` is held (or done) already.
      while (from < messages.length && Number(messages[from]!.offset) < w.next) from++;
      if (from === messages.length) return;
    } else {
      w = new PartitionWork(key, batch.topic, batch.partition);
      this.work.set(key, w);
    }
    const n = messages.length - from;
    const chunk: Chunk = { entries: new Array<Entry>(n), resolved: 0, payload: 0, unfinished: n };
    for (let i = from; i < messages.length; i++) {
      const message = messages[i]!;
      chunk.payload += (message.value?.length ?? 0) + (message.key?.length ?? 0);
      chunk.entries[i - from] = {
        message,
        offset: message.offset,
        chunk,
        state: 'queued',
        started: false,
        timer: undefined,
        failures: 0,
        job: undefined,
        successor: undefined,
        due: dueOf(message),
      };
    }
    w.chunks.push(chunk);
    w.held += n;
    w.heldBytes += chunk.payload + n * UNFINISHED_BYTES;
    w.batch = batch;
    w.next = Number(messages[messages.length - 1]!.offset) + 1;
    for (const e of chunk.entries) this.route(w, e);
    const overdue = chunk.entries[0]!.due < this.now() - BACKLOG_AGE_MS;
    if (this.settle && (overdue || this.settle.held.has(w))) {
      // Held until the other partitions' backlogs are here too (or the settle time is up).
      this.settle.held.add(w);
      this.regulate(w);
      return;
    }
    // A backlog (fires overdue) starts on the next turn, merged by due time with the other
    // partitions' batches of the same fetch; fires on time start at once.
    if (!this.dispatchScheduled && !overdue) {
      this.pump(w);
      return;
    }
    this.fresh.add(w);
    if (!this.dispatchScheduled) {
      this.dispatchScheduled = true;
      setImmediate(() => this.dispatchFresh());
    }
  }

  /**
   * Starts the partitions that were given batches (or slots) since the last dispatch: their ready
   * messages, merged by due time (each partition's own order kept), go to the processor as one
   * group as far as the slots go, so a backlog of several partitions starts most overdue first and
   * shares one ledger write; what does not fit waits for slots by due time.
   */
  private dispatchFresh(): void {
    this.dispatchScheduled = false;
    const held = this.settle?.held;
    const parts = [...this.fresh].filter((w) => !held?.has(w));
    this.fresh.clear();
    // Slots handed to these partitions are pooled: whichever partition's fire is most overdue uses them.
    let slots = 0;
    for (const w of parts) {
      slots += w.granted;
      w.granted = 0;
    }
    const live = parts.filter((w) => !w.discarded && w.ready.length > 0);
    // Within a partition too, the most overdue start first: a claim that caps each tenant's share
    // puts an older fire of one tenant after newer ones of another. Each job keeps its order.
    for (const w of live) if (w.ready.length > 1) inDueOrderPerJob(w.ready);
    if (this.processor.processMany && !this.stopping && !this.suspended && live.length > 0) {
      const taken = new Map<PartitionWork, number>(live.map((w) => [w, 0]));
      const picked: { w: PartitionWork; e: Entry }[] = [];
      while (picked.length < MAX_GROUP) {
        let best: PartitionWork | undefined;
        let bestDue = Infinity;
        for (const w of live) {
          const i = taken.get(w)!;
          if (i < w.ready.length && w.ready[i]!.due < bestDue) {
            best = w;
            bestDue = w.ready[i]!.due;
          }
        }
        if (best === undefined) break;
        if (slots === 0) {
          if (!this.slots.tryAcquire()) break;
          slots++;
        }
        slots--;
        const i = taken.get(best)!;
        picked.push({ w: best, e: best.ready[i]! });
        taken.set(best, i + 1);
      }
      for (const [w, n] of taken) w.ready.splice(0, n);
      if (picked.length > 0) this.runAcross(picked);
    }
    for (; slots > 0; slots--) this.slots.release();
    for (const w of parts) this.pump(w);
  }

  /** Runs messages of several partitions as one group (processMany), each holding a slot taken for it. */
  private runAcross(picked: readonly { w: PartitionWork; e: Entry }[]): void {
    let results: Promise<ProcessResult>[];
    try {
      results = this.processor.processMany!(
        picked.map((p) => p.e.message!),
        this.abort.signal,
      );
    } catch (err) {
      results = picked.map(() => Promise.reject(err));
    }
    picked.forEach((p, i) => this.settleWhenDone(p.w, p.e, results[i]!));
  }

  /** The group started a rebalance: stop marking offsets until the new assignment is known. */
  onRebalance(): void {
    this.suspended = true;
  }

  /**
   * The new assignment (all topics): drop the work of partitions that left it and resume them.
   * An empty one when the consumer lost the group (it crashed): everything is dropped.
   */
  onAssignment(assignment: ReadonlyMap<string, readonly number[]>): void {
    const keys = new Set<string>();
    for (const [topic, partitions] of assignment) for (const p of partitions) keys.add(keyOf(topic, p));
    // An assignment that starts from nothing (the first, or the one after the consumer lost the
    // group, as on a broker's return) settles: its partitions' first batches come one fetch or
    // more apart (seconds, while their leaders come back), and the first to come would otherwise
    // go out whole before the others' older fires. Overdue batches wait for the partitions
    // `expectBacklog` names, at most the settle time; fires on time do not wait. A member that
    // keeps partitions through an ordinary rebalance (a rolling deploy, a member's death) does not.
    const fromNothing = this.assigned === null || this.assigned.size === 0;
    this.endSettle();
    if (this.backlogSettleMs > 0 && fromNothing && keys.size > 0 && !this.stopping) {
      const timer = this.clock.setTimeout(() => this.endSettle(), this.backlogSettleMs);
      (timer as { unref?: () => void }).unref?.();
      this.settle = { pending: null, heard: new Set(), held: new Set(), timer };
    }
    for (const w of [...this.work.values()]) {
      if (keys.has(w.key)) continue;
      this.discard(w);
      if (w.paused) this.control.resume(w.topic, [w.partition]);
    }
    this.assigned = keys;
    this.suspended = false;
    for (const w of [...this.work.values()]) {
      this.markResolved(w);
      this.finishIfDone(w);
      this.pump(w);
    }
  }

  /**
   * Which partitions of the assignment have messages waiting (committed offset below the end):
   * an assignment's backlog waits for their first batches, at most the settle time. Partitions
   * heard from already count as here.
   */
  expectBacklog(partitions: ReadonlyMap<string, readonly number[]>): void {
    const settle = this.settle;
    if (!settle || settle.pending !== null) return;
    settle.pending = new Set();
    for (const [topic, ps] of partitions)
      for (const p of ps) {
        const key = keyOf(topic, p);
        if ((this.assigned?.has(key) ?? false) && !settle.heard.has(key)) settle.pending.add(key);
      }
    this.endSettleIfHeardAll();
  }

  /** Whether an assignment's backlog is still waiting for partitions (see `expectBacklog`). */
  get settling(): boolean {
    return this.settle !== undefined;
  }

  private heardFrom(key: string): void {
    this.settle!.heard.add(key);
    this.settle!.pending?.delete(key);
    // The last partition awaited is here: what was held starts, merged with this batch if overdue.
    this.endSettleIfHeardAll();
  }

  private endSettleIfHeardAll(): void {
    if (this.settle?.pending?.size === 0) this.endSettle();
  }

  /** The held backlog starts, merged by due time across its partitions. */
  private endSettle(): void {
    const settle = this.settle;
    if (!settle) return;
    this.settle = undefined;
    this.clock.clearTimeout(settle.timer);
    let any = false;
    for (const w of settle.held) {
      if (w.discarded) continue;
      this.fresh.add(w);
      any = true;
    }
    if (any && !this.dispatchScheduled) {
      this.dispatchScheduled = true;
      setImmediate(() => this.dispatchFresh());
    }
  }

  /**
   * Stops taking work at once: parked messages are dropped (re-delivered to whoever owns the
   * partition next); running ones go on. A stopping executor calls this, leaves the group (so
   * its partitions move now, not after the drain) and then `stop`s.
   */
  quiesce(): void {
    if (this.stopping) return;
    this.stopping = true;
    if (this.settle) this.clock.clearTimeout(this.settle.timer);
    this.settle = undefined;
    for (const w of this.work.values())
      for (const c of w.chunks) for (const e of c.entries) this.unpark(e, 'dropped');
  }

  /**
   * Stops taking work: parked messages are dropped (they are re-delivered to whoever owns the
   * partition next), running ones get `drainMs` to finish, then are aborted; what finished is
   * marked processed and committed.
   */
  async stop(drainMs: number): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    this.quiesce();
    if (!(await this.waitIdle(drainMs))) {
      this.abort.abort();
      await this.waitIdle(10_000);
    }
    if (!this.suspended) await this.lastBatch?.commit({ force: true }).catch(() => undefined);
  }

  /** What the flow holds right now. */
  stats(): FlowStats {
    let held = 0;
    let heldBytes = 0;
    let paused = 0;
    let maxPartitionHeldBytes = 0;
    for (const w of this.work.values()) {
      held += w.held;
      heldBytes += w.heldBytes;
      if (w.paused) paused++;
      maxPartitionHeldBytes = Math.max(maxPartitionHeldBytes, w.heldBytes);
    }
    return {
      partitionsHeld: this.work.size,
      partitionsPaused: paused,
      running: this.running,
      parked: this.parked,
      held,
      heldBytes,
      maxPartitionHeldBytes,
    };
  }

  /** A new message: behind an earlier one of its job that waits to start, or on its way. */
  private route(w: PartitionWork, e: Entry): void {
    if (w.waiting !== undefined && w.waiting.size > 0) {
      const job = jobOf(e);
      const before = job === undefined ? undefined : w.waiting.get(job);
      if (before !== undefined) {
        before.successor = e;
        e.state = 'blocked';
        w.waiting.set(job!, e);
        return;
      }
    }
    this.admit(w, e);
  }

  /** Parks `e` until its hold time, or queues it to start (and lets its job's next one follow). */
  private admit(w: PartitionWork, e: Entry): void {
    for (let next: Entry | undefined = e; next !== undefined; ) {
      const cur: Entry = next;
      next = undefined;
      const hold = this.processor.holdUntil?.(cur.message!);
      const wait = hold === undefined ? 0 : hold - this.now();
      if (wait > 0) {
        this.park(w, cur, wait);
        // Not started yet: the later messages of its job wait for it.
        const job = jobOf(cur);
        if (job !== undefined && !(w.waiting ??= new Map()).has(job)) w.waiting.set(job, cur);
      } else {
        cur.state = 'queued';
        w.ready.push(cur);
        next = this.unblock(w, cur);
      }
    }
  }

  /** `e` is queued to start: its job's next message may follow it (returned), or nothing waits. */
  private unblock(w: PartitionWork, e: Entry): Entry | undefined {
    const next = e.successor;
    if (next !== undefined) {
      e.successor = undefined;
      return next;
    }
    if (e.job !== undefined && w.waiting?.get(e.job) === e) w.waiting.delete(e.job);
    return undefined;
  }

  private park(w: PartitionWork, e: Entry, ms: number): void {
    e.state = 'parked';
    this.parked++;
    e.timer = this.clock.setTimeout(
      () => {
        e.timer = undefined;
        this.parked--;
        if (w.discarded || this.stopping) {
          e.state = 'dropped';
          return;
        }
        e.state = 'queued';
        w.ready.push(e);
        const next = this.unblock(w, e);
        if (next !== undefined) this.admit(w, next);
        this.pump(w);
      },
      Math.min(Math.max(0, ms), MAX_TIMER_MS),
    );
  }

  private unpark(e: Entry, to: EntryState): void {
    if (e.state === 'blocked') {
      e.state = to;
      return;
    }
    if (e.state !== 'parked' || !e.timer) return;
    this.clock.clearTimeout(e.timer);
    e.timer = undefined;
    e.state = to;
    this.parked--;
  }

  private pump(w: PartitionWork): void {
    // A backlog held while the assignment settles starts when it has (endSettle).
    if (this.settle?.held.has(w)) {
      for (; w.granted > 0; w.granted--) this.slots.release();
      this.regulate(w);
      return;
    }
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
              // The partitions handed slots in one turn start together, most overdue first.
              w.granted++;
              this.fresh.add(w);
              if (!this.dispatchScheduled) {
                this.dispatchScheduled = true;
                setImmediate(() => this.dispatchFresh());
              }
              return;
            }
            const e = w.ready.shift()!;
            this.run(w, e);
            this.pump(w);
          }, w.ready[0]!.due);
        }
        break;
      }
      this.run(w, w.ready.shift()!);
    }
    // Nothing (more) to run here: slots kept for this partition go back.
    for (; w.granted > 0; w.granted--) this.slots.release();
    this.regulate(w);
  }

  /**
   * Fetching of `w` stops while it holds its bound or has messages waiting for a slot (fetching
   * more would only hold more), and goes on otherwise.
   */
  private regulate(w: PartitionWork): void {
    if (w.discarded || this.stopping) return;
    const stop = w.heldBytes >= this.maxHeldBytes || w.ready.length > 0;
    if (stop === w.paused) return;
    w.paused = stop;
    if (stop) this.control.pause(w.topic, [w.partition]);
    else this.control.resume(w.topic, [w.partition]);
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
    this.settleWhenDone(w, e, this.processor.process(e.message!, this.abort.signal));
  }

  /** Runs messages together (processMany), each holding a slot already taken for it. */
  private runMany(w: PartitionWork, entries: readonly Entry[]): void {
    let results: Promise<ProcessResult>[];
    try {
      results = this.processor.processMany!(
        entries.map((e) => e.message!),
        this.abort.signal,
      );
    } catch (err) {
      results = entries.map(() => Promise.reject(err));
    }
    entries.forEach((e, i) => this.settleWhenDone(w, e, results[i]!));
  }

  /** Marks `e` running; when `processing` settles, frees its slot and resolves, parks or drops it. */
  private settleWhenDone(w: PartitionWork, e: Entry, processing: Promise<ProcessResult>): void {
    const message = e.message!;
    e.state = 'running';
    e.started = true;
    w.running++;
    this.running++;
    processing
      .catch((err: unknown): ProcessResult => {
        e.failures++;
        this.events.onError?.(err as Error, message, e.failures);
        const backoff = Math.min(ERROR_BACKOFF_MS.max, ERROR_BACKOFF_MS.initial * 2 ** (e.failures - 1));
        return { kind: 'later', afterMs: backoff / 2 + Math.random() * (backoff / 2) };
      })
      .then((r) => {
        this.slots.release();
        w.running--;
        this.running--;
        if (r.kind === 'done') {
          e.state = 'done';
          e.message = null;
          // Its bytes go; its place stays held (cheaply) until the messages before it are done.
          w.heldBytes -= UNFINISHED_BYTES - DONE_BYTES;
          if (--e.chunk.unfinished === 0) w.heldBytes -= e.chunk.payload;
          this.markResolved(w);
        } else if (r.kind === 'later' && !this.stopping && !w.discarded) {
          this.park(w, e, r.afterMs);
        } else {
          e.state = 'dropped';
        }
        this.finishIfDone(w);
        this.regulate(w);
        if (this.running === 0) this.notifyIdle();
      })
      .catch((err: unknown) => this.events.onError?.(err as Error, message, e.failures));
  }

  /** Marks processed every offset up to the partition's first message not yet done. */
  private markResolved(w: PartitionWork): void {
    while (w.chunks.length > 0) {
      const c = w.chunks[0]!;
      let i = c.resolved;
      while (i < c.entries.length && c.entries[i]!.state === 'done') i++;
      if (i > c.resolved) {
        w.held -= i - c.resolved;
        w.heldBytes -= (i - c.resolved) * DONE_BYTES;
        c.resolved = i;
        w.resolvedOffset = c.entries[i - 1]!.offset;
        w.markDue = true;
      }
      if (i < c.entries.length) break;
      w.chunks.shift();
    }
    if (!w.markDue || w.discarded || this.suspended || w.batch === undefined) return;
    if (this.assigned && !this.assigned.has(w.key)) return;
    w.markDue = false;
    try {
      w.batch.markProcessed(w.resolvedOffset);
    } catch {
      // The consumer moved on (restarted or reassigned): the next owner re-reads from the commit.
    }
  }

  /** A partition whose messages are all done and marked is forgotten (the consumer commits the mark). */
  private finishIfDone(w: PartitionWork): void {
    if (w.discarded || this.stopping || w.chunks.length > 0 || w.markDue) return;
    this.work.delete(w.key);
    if (w.paused) {
      w.paused = false;
      this.control.resume(w.topic, [w.partition]);
    }
  }

  private discard(w: PartitionWork): void {
    w.discarded = true;
    for (const c of w.chunks) for (const e of c.entries) this.unpark(e, 'dropped');
    w.ready.length = 0;
    w.waiting = undefined;
    this.work.delete(w.key);
  }

  private waitIdle(ms: number): Promise<boolean> {
    if (this.running === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => resolve(false), ms);
      this.idle.push(() => {
        this.clock.clearTimeout(timer);
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

/** The header a fire event carries its due time in (epoch ms; see FirePublisher). */
const DUE_AT_HEADER = 'tickwork-due-at';

/** When a message's fire came due: its `tickwork-due-at` header, else when it was produced. */
function dueOf(message: InboundMessage): number {
  const header = message.headers[DUE_AT_HEADER];
  const due = header === undefined ? NaN : Number(header);
  return Number.isFinite(due) ? due : message.timestamp;
}

/** The job of a message (its key), kept on the entry; none for a message without a key. */
/**
 * Reorders `entries` (in place) by due time, stable, keeping each job's entries in their order:
 * the jobs' entries are sorted as a whole, then each job takes the places its entries got, in
 * its own order. Entries without a key are each a job of their own.
 */
function inDueOrderPerJob(entries: Entry[]): void {
  let sorted = true;
  for (let i = 1; i < entries.length && sorted; i++) sorted = entries[i - 1]!.due <= entries[i]!.due;
  if (sorted) return;
  const order = entries.map((e, i) => ({ e, i })).sort((a, b) => a.e.due - b.e.due || a.i - b.i);
  const perJob = new Map<string, Entry[]>();
  for (const e of entries) {
    const job = jobOf(e);
    if (job !== undefined) (perJob.get(job) ?? perJob.set(job, []).get(job)!).push(e);
  }
  const taken = new Map<string, number>();
  for (let k = 0; k < order.length; k++) {
    const job = jobOf(order[k]!.e);
    if (job === undefined) {
      entries[k] = order[k]!.e;
      continue;
    }
    const n = taken.get(job) ?? 0;
    taken.set(job, n + 1);
    entries[k] = perJob.get(job)![n]!;
  }
}

function jobOf(e: Entry): string | undefined {
  const key = e.message?.key;
  if (e.job === undefined && key) e.job = key.toString('latin1');
  return e.job;
}
