import type { InboundBatch, InboundMessage } from '@tickwork/messaging';
import { PartitionFlow, type MessageProcessor, type ProcessResult } from './partition-flow';
import { Slots } from './slots';

/** A batch as the consumer hands it over, recording what the flow marks and commits. */
function batchOf(
  topic: string,
  partition: number,
  offsets: number[],
  headers: (o: number) => Record<string, string> = () => ({}),
) {
  const marked: string[] = [];
  const commits: boolean[] = [];
  const batch: InboundBatch = {
    topic,
    partition,
    messages: offsets.map(
      (o): InboundMessage => ({
        topic,
        partition,
        offset: String(o),
        key: null,
        value: Buffer.from(String(o)),
        headers: headers(o),
        timestamp: Date.now(),
      }),
    ),
    markProcessed: (offset) => marked.push(offset),
    heartbeat: async () => undefined,
    isActive: () => true,
    commit: async (opts) => void commits.push(opts?.force ?? false),
  };
  return { batch, marked, commits };
}

class Control {
  readonly paused = new Set<string>();
  readonly log: string[] = [];
  pause(topic: string, partitions: readonly number[] = []): void {
    for (const p of partitions) this.paused.add(`${topic}|${p}`);
    this.log.push(`pause ${topic}|${partitions.join(',')}`);
  }
  resume(topic: string, partitions: readonly number[] = []): void {
    for (const p of partitions) this.paused.delete(`${topic}|${p}`);
    this.log.push(`resume ${topic}|${partitions.join(',')}`);
  }
}

/** A processor whose calls the test completes by hand. */
class ManualProcessor implements MessageProcessor {
  readonly started: string[] = [];
  private readonly pending = new Map<string, (r: ProcessResult) => void>();
  maxConcurrent = 0;
  holdUntil?: (m: InboundMessage) => number | undefined;

  process(message: InboundMessage): Promise<ProcessResult> {
    this.started.push(message.offset);
    this.maxConcurrent = Math.max(this.maxConcurrent, this.pending.size + 1);
    return new Promise((resolve) => this.pending.set(message.offset, resolve));
  }

  finish(offset: string, r: ProcessResult = { kind: 'done' }): void {
    const f = this.pending.get(offset);
    if (!f) throw new Error(`offset ${offset} is not running`);
    this.pending.delete(offset);
    f(r);
  }

  running(): string[] {
    return [...this.pending.keys()];
  }
}

/** A ManualProcessor that also takes messages in groups, recording each group it was handed. */
class GroupingProcessor extends ManualProcessor {
  readonly groups: string[][] = [];
  processMany(messages: readonly InboundMessage[]): Promise<ProcessResult>[] {
    this.groups.push(messages.map((m) => m.offset));
    return messages.map((m) => this.process(m));
  }
}

const tick = () => new Promise((r) => setImmediate(r));

describe('PartitionFlow', () => {
  it('returns at once, keeps fetching, and marks offsets only up to the first unfinished message', async () => {
    const control = new Control();
    const proc = new ManualProcessor();
    const flow = new PartitionFlow(control, new Slots(10), proc);
    const { batch, marked } = batchOf('fires', 0, [10, 11, 12]);
    await flow.onBatch(batch);
    // Every message got a slot and the partition is far below its bound: it is not paused.
    expect(control.log).toEqual([]);
    expect(proc.running()).toEqual(['10', '11', '12']);
    proc.finish('11');
    await tick();
    expect(marked).toEqual([]);
    proc.finish('10');
    await tick();
    expect(marked).toEqual(['11']);
    proc.finish('12');
    await tick();
    expect(marked).toEqual(['11', '12']);
    expect(flow.stats()).toMatchObject({ partitionsHeld: 0, held: 0, heldBytes: 0 });
    expect(control.log).toEqual([]);
  });

  it('fetches ahead while a slow message runs: later batches run, the mark waits for the slow one', async () => {
    const control = new Control();
    const proc = new ManualProcessor();
    const flow = new PartitionFlow(control, new Slots(10), proc);
    const a = batchOf('fires', 0, [1, 2, 3]);
    await flow.onBatch(a.batch);
    proc.finish('2');
    proc.finish('3');
    await tick();
    const b = batchOf('fires', 0, [4, 5]);
    await flow.onBatch(b.batch);
    expect(proc.running()).toEqual(['1', '4', '5']);
    proc.finish('4');
    proc.finish('5');
    await tick();
    // Everything after 1 is done, and nothing is marked: the commit never passes 1.
    expect([...a.marked, ...b.marked]).toEqual([]);
    expect(flow.stats()).toMatchObject({ partitionsHeld: 1, held: 5, running: 1 });
    expect(control.paused.has('fires|0')).toBe(false);
    proc.finish('1');
    await tick();
    // Marked through the batch holding the last done message, once, up to the end.
    expect(a.marked).toEqual([]);
    expect(b.marked).toEqual(['5']);
    expect(flow.stats()).toMatchObject({ partitionsHeld: 0, held: 0 });
  });

  it('stops fetching a partition at its memory bound; a done message holds only its place', async () => {
    const control = new Control();
    const proc = new ManualProcessor();
    // A test message has 1 byte of value; one unfinished costs 768 more, one done 100.
    const flow = new PartitionFlow(control, new Slots(10), proc, {}, { maxHeldBytes: 3 * 768 });
    await flow.onBatch(batchOf('fires', 0, [1, 2]).batch);
    proc.finish('2');
    await tick();
    expect(flow.stats()).toMatchObject({ held: 2, heldBytes: 2 + 768 + 100 });
    await flow.onBatch(batchOf('fires', 0, [3]).batch);
    expect(control.paused.has('fires|0')).toBe(false);
    const last = batchOf('fires', 0, [4]);
    await flow.onBatch(last.batch);
    // 1, 3 and 4 are unfinished: the bound is reached.
    expect(control.paused.has('fires|0')).toBe(true);
    expect(flow.stats()).toMatchObject({ held: 4, heldBytes: 4 + 3 * 768 + 100, partitionsPaused: 1 });
    proc.finish('4');
    await tick();
    // 4 is done: it lets go of its bytes, and the partition goes on though 1 still holds the mark.
    expect(control.paused.has('fires|0')).toBe(false);
    expect(flow.stats()).toMatchObject({ held: 4, heldBytes: 3 + 2 * 768 + 2 * 100 });
    expect(last.marked).toEqual([]);
    proc.finish('1');
    proc.finish('3');
    await tick();
    expect(last.marked.at(-1)).toBe('4');
    expect(flow.stats()).toMatchObject({ partitionsHeld: 0, held: 0, heldBytes: 0 });
    expect(control.log).toEqual(['pause fires|0', 'resume fires|0']);
  });

  it('stops fetching a partition while its messages wait for a slot, and goes on once they run', async () => {
    const control = new Control();
    const proc = new ManualProcessor();
    const flow = new PartitionFlow(control, new Slots(2), proc);
    await flow.onBatch(batchOf('fires', 0, [1, 2, 3]).batch);
    expect(proc.running()).toEqual(['1', '2']);
    expect(control.paused.has('fires|0')).toBe(true);
    proc.finish('1');
    await tick();
    expect(proc.running()).toEqual(['2', '3']);
    expect(control.paused.has('fires|0')).toBe(false);
  });

  it('skips messages fetched again that it holds already (a rebalance that kept the partition here)', async () => {
    const control = new Control();
    const proc = new ManualProcessor();
    const flow = new PartitionFlow(control, new Slots(10), proc);
    const a = batchOf('fires', 0, [1, 2, 3]);
    await flow.onBatch(a.batch);
    proc.finish('2');
    await tick();
    flow.onRebalance();
    flow.onAssignment(new Map([['fires', [0]]]));
    // kafkajs fetches again from the commit (1): 1-3 are held, 4 is new.
    const again = batchOf('fires', 0, [1, 2, 3, 4]);
    await flow.onBatch(again.batch);
    await flow.onBatch(batchOf('fires', 0, [2, 3]).batch);
    expect(proc.started).toEqual(['1', '2', '3', '4']);
    for (const o of ['1', '3', '4']) proc.finish(o);
    await tick();
    // Marked through the latest batch (a mark covers the partition), never past an unfinished one.
    expect(again.marked).toEqual(['2', '3', '4']);
  });

  it('starts the fires of one job in partition order; a parked one holds only its own job', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    try {
      const control = new Control();
      const proc = new ManualProcessor();
      const t0 = Date.now();
      // Offset 1 (job a) is parked until t0 + 1000; 2 and 4 are job a's later fires, 3 is job b's.
      const jobs: Record<number, string> = { 1: 'a', 2: 'a', 3: 'b', 4: 'a', 5: 'b' };
      proc.holdUntil = (m) => (m.offset === '1' ? t0 + 1_000 : undefined);
      const flow = new PartitionFlow(control, new Slots(10), proc);
      const withKeys = (offsets: number[]) => {
        const b = batchOf('retry', 0, offsets);
        const messages = b.batch.messages.map((m) => ({ ...m, key: Buffer.from(jobs[Number(m.offset)]!) }));
        return { ...b, batch: { ...b.batch, messages } };
      };
      const first = withKeys([1, 2, 3]);
      await flow.onBatch(first.batch);
      expect(proc.running()).toEqual(['3']);
      const second = withKeys([4, 5]);
      await flow.onBatch(second.batch);
      expect(proc.running()).toEqual(['3', '5']);
      expect(flow.stats().parked).toBe(1);
      jest.advanceTimersByTime(1_000);
      // a's fires start in their order, behind the parked one.
      expect(proc.started).toEqual(['3', '5', '1', '2', '4']);
      for (const o of ['1', '2', '3', '4', '5']) proc.finish(o);
      await tick();
      expect(second.marked.at(-1)).toBe('5');
    } finally {
      jest.useRealTimers();
    }
  });

  it('lets a parked message hold neither the partition nor the slots', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    try {
      const control = new Control();
      const proc = new ManualProcessor();
      const slots = new Slots(2);
      const flow = new PartitionFlow(control, slots, proc);
      const a = batchOf('fires', 0, [1, 2]);
      await flow.onBatch(a.batch);
      proc.finish('1', { kind: 'later', afterMs: 30_000 }); // e.g. a run leased elsewhere
      proc.finish('2');
      await tick();
      const b = batchOf('fires', 0, [3, 4]);
      await flow.onBatch(b.batch);
      expect(proc.running()).toEqual(['3', '4']);
      proc.finish('3');
      proc.finish('4');
      await tick();
      expect(slots.inUse()).toBe(0);
      expect(control.paused.has('fires|0')).toBe(false);
      expect([...a.marked, ...b.marked]).toEqual([]);
      jest.advanceTimersByTime(30_000);
      proc.finish('1');
      await tick();
      expect(b.marked).toEqual(['4']);
    } finally {
      jest.useRealTimers();
    }
  });

  it('drops everything when the consumer lost the group (an empty assignment), resuming what it paused', async () => {
    const control = new Control();
    const proc = new ManualProcessor();
    const flow = new PartitionFlow(control, new Slots(1), proc);
    const a = batchOf('fires', 0, [1, 2]);
    await flow.onBatch(a.batch);
    expect(control.paused.has('fires|0')).toBe(true);
    flow.onAssignment(new Map());
    expect(control.paused.has('fires|0')).toBe(false);
    proc.finish('1');
    await tick();
    expect(a.marked).toEqual([]);
    expect(proc.started).toEqual(['1']);
    expect(flow.stats()).toMatchObject({ partitionsHeld: 0, running: 0 });
  });

  it('never runs more messages than there are slots, across partitions', async () => {
    const control = new Control();
    const proc = new ManualProcessor();
    const flow = new PartitionFlow(control, new Slots(2), proc);
    await flow.onBatch(batchOf('fires', 0, [1, 2, 3]).batch);
    await flow.onBatch(batchOf('fires', 1, [7, 8]).batch);
    expect(proc.running()).toEqual(['1', '2']);
    proc.finish('1');
    await tick();
    expect(proc.running()).toHaveLength(2);
    for (let i = 0; i < 10 && proc.running().length > 0; i++) {
      for (const o of proc.running()) proc.finish(o);
      await tick();
    }
    expect(proc.started.sort()).toEqual(['1', '2', '3', '7', '8']);
    expect(proc.maxConcurrent).toBe(2);
    expect(control.paused.size).toBe(0);
  });

  it('parks a message until its hold time without taking a slot', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    try {
      const control = new Control();
      const proc = new ManualProcessor();
      const t0 = Date.now();
      proc.holdUntil = (m) => (m.offset === '1' ? t0 + 5_000 : undefined);
      const slots = new Slots(1);
      const flow = new PartitionFlow(control, slots, proc);
      const { batch, marked } = batchOf('retry', 0, [1, 2]);
      await flow.onBatch(batch);
      expect(proc.running()).toEqual(['2']);
      proc.finish('2');
      await tick();
      expect(marked).toEqual([]);
      expect(flow.stats().parked).toBe(1);
      expect(slots.inUse()).toBe(0);
      jest.advanceTimersByTime(4_999);
      expect(proc.running()).toEqual([]);
      jest.advanceTimersByTime(1);
      expect(proc.running()).toEqual(['1']);
      proc.finish('1');
      await tick();
      expect(marked).toEqual(['2']);
    } finally {
      jest.useRealTimers();
    }
  });

  it('retries a message that asks for later, and one that threw, keeping the commit point behind it', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    try {
      const control = new Control();
      const proc = new ManualProcessor();
      const errors: number[] = [];
      const flow = new PartitionFlow(control, new Slots(5), proc, { onError: (_e, _m, n) => errors.push(n) });
      const { batch, marked } = batchOf('fires', 3, [5, 6]);
      await flow.onBatch(batch);
      proc.finish('5', { kind: 'later', afterMs: 1_000 });
      proc.finish('6');
      await tick();
      expect(marked).toEqual([]);
      jest.advanceTimersByTime(1_000);
      expect(proc.running()).toEqual(['5']);
      proc.finish('5');
      await tick();
      expect(marked).toEqual(['6']);

      const throwing: MessageProcessor = { process: () => Promise.reject(new Error('database down')) };
      const flow2 = new PartitionFlow(control, new Slots(5), throwing, {
        onError: (_e, _m, n) => errors.push(n),
      });
      const b2 = batchOf('fires', 4, [1]);
      await flow2.onBatch(b2.batch);
      await tick();
      expect(errors).toEqual([1]);
      jest.advanceTimersByTime(30_000);
      await tick();
      expect(errors.length).toBeGreaterThanOrEqual(2);
      expect(b2.marked).toEqual([]);
    } finally {
      jest.useRealTimers();
    }
  });

  it('drops the work of a revoked partition and resumes it, without marking its offsets', async () => {
    const control = new Control();
    const proc = new ManualProcessor();
    const flow = new PartitionFlow(control, new Slots(1), proc);
    const a = batchOf('fires', 0, [1, 2]);
    const b = batchOf('fires', 1, [9]);
    await flow.onBatch(a.batch);
    await flow.onBatch(b.batch);
    flow.onRebalance();
    proc.finish('1');
    await tick();
    expect(a.marked).toEqual([]); // suspended during the rebalance
    flow.onAssignment(new Map([['fires', [1]]]));
    expect(control.paused.has('fires|0')).toBe(false);
    expect(a.marked).toEqual([]);
    // The slot freed by partition 0 goes to partition 1, not to partition 0's remaining message.
    await tick();
    expect(proc.running()).toEqual(['9']);
    proc.finish('9');
    await tick();
    expect(b.marked).toEqual(['9']);
    expect(proc.started).not.toContain('2');
  });

  it('on stop, lets running work finish, marks it, and commits with force', async () => {
    const control = new Control();
    const proc = new ManualProcessor();
    const flow = new PartitionFlow(control, new Slots(5), proc);
    const { batch, marked, commits } = batchOf('fires', 0, [1]);
    await flow.onBatch(batch);
    const stopped = flow.stop(5_000);
    proc.finish('1');
    await stopped;
    expect(marked).toEqual(['1']);
    expect(commits).toContain(true);
    await flow.onBatch(batchOf('fires', 0, [2]).batch);
    expect(proc.started).toEqual(['1']);
  });

  describe('with a processor that takes groups', () => {
    it('hands a batch over as one group up to the free slots; each message settles on its own', async () => {
      const proc = new GroupingProcessor();
      const flow = new PartitionFlow(new Control(), new Slots(3), proc);
      const { batch, marked } = batchOf('fires', 0, [1, 2, 3, 4, 5]);
      await flow.onBatch(batch);
      expect(proc.groups).toEqual([['1', '2', '3']]);
      proc.finish('2');
      await tick();
      expect(marked).toEqual([]); // 1 is not done
      proc.finish('1');
      await tick();
      expect(marked).toEqual(['2']);
      // The two freed slots went out together, after the releases of that turn.
      expect(proc.groups).toEqual([
        ['1', '2', '3'],
        ['4', '5'],
      ]);
    });

    it('gathers the slots a settling group frees into one group across partitions, in due order', async () => {
      const proc = new GroupingProcessor();
      const slots = new Slots(4);
      const flow = new PartitionFlow(new Control(), slots, proc);
      const now = Date.now();
      // On time (started at once), due a few ms apart: partition 1's interleave with partition 0's.
      const a = batchOf('fires', 0, [1, 2, 3, 4, 5, 6, 7, 8], (o) => ({
        'tickwork-due-at': String(now + o * 10),
      }));
      const b = batchOf('fires', 1, [11, 12, 13], (o) => ({
        'tickwork-due-at': String(now + (o - 10) * 10 + 55),
      }));
      await flow.onBatch(a.batch);
      await flow.onBatch(b.batch);
      expect(proc.groups).toEqual([['1', '2', '3', '4']]);
      for (const o of ['1', '2', '3', '4']) proc.finish(o);
      await tick();
      await tick();
      // The four freed slots went out as one group, not one message each, to the most overdue
      // fires of both partitions: 5 (due +50 ms), 6 (+60), 11 (+65), 7 (+70).
      expect(proc.groups.slice(1)).toEqual([['5', '6', '11', '7']]);
      expect(slots.inUse()).toBe(4);
      while (proc.running().length > 0) {
        for (const o of proc.running()) proc.finish(o);
        await tick();
        await tick();
      }
      expect([...proc.started].sort()).toEqual(['1', '11', '12', '13', '2', '3', '4', '5', '6', '7', '8']);
      expect(a.marked.at(-1)).toBe('8');
      expect(b.marked.at(-1)).toBe('13');
      expect(slots.inUse()).toBe(0);
    });

    it('gives back the slots kept for a partition that left the assignment', async () => {
      const proc = new GroupingProcessor();
      const slots = new Slots(2);
      const flow = new PartitionFlow(new Control(), slots, proc);
      flow.onAssignment(new Map([['fires', [0, 1]]]));
      await flow.onBatch(batchOf('fires', 0, [1, 2]).batch);
      await flow.onBatch(batchOf('fires', 1, [11, 12]).batch);
      proc.finish('1');
      proc.finish('2');
      // Partition 1 is granted a freed slot (its group waits for the next turn); it leaves first.
      for (let i = 0; i < 10; i++) await Promise.resolve();
      expect(slots.inUse()).toBe(1);
      flow.onAssignment(new Map([['fires', [0]]]));
      await tick();
      await tick();
      expect(proc.started).not.toContain('11');
      expect(slots.inUse()).toBe(0);
    });

    it('starts a backlog of several partitions in due order across them, as far as the slots go', async () => {
      const proc = new GroupingProcessor();
      const slots = new Slots(4);
      const flow = new PartitionFlow(new Control(), slots, proc);
      const base = Date.now() - 60_000;
      // Each partition's backlog spans the outage; together they interleave by due time.
      const due = (o: number) => ({ 'tickwork-due-at': String(base + (o % 10) * 1_000) });
      const a = batchOf('fires', 0, [10, 12, 14, 16], due);
      const b = batchOf('fires', 1, [21, 23, 25, 27], due);
      await flow.onBatch(a.batch);
      await flow.onBatch(b.batch);
      expect(proc.started).toEqual([]); // merged on the next turn
      await tick();
      // The four most overdue of both partitions (due 0, 1, 2, 3 s), not partition 0's four.
      expect([...proc.started].sort()).toEqual(['10', '12', '21', '23']);
      // As slots free up, the partition whose next fire is most overdue is served first.
      proc.finish('10');
      await tick();
      await tick();
      expect(proc.started.at(-1)).toBe('14');
      proc.finish('12');
      await tick();
      await tick();
      expect(proc.started.at(-1)).toBe('25');
    });

    it('starts fires that are on time at once, without waiting to merge them', async () => {
      const proc = new GroupingProcessor();
      const flow = new PartitionFlow(new Control(), new Slots(4), proc);
      await flow.onBatch(
        batchOf('fires', 0, [1, 2], () => ({ 'tickwork-due-at': String(Date.now()) })).batch,
      );
      expect(proc.started).toEqual(['1', '2']);
    });
  });
  it('starts a backlog of one partition most overdue first, each job in its partition order', async () => {
    const proc = new GroupingProcessor();
    const flow = new PartitionFlow(new Control(), new Slots(10), proc);
    const base = Date.now() - 60_000;
    const jobs: Record<number, [string, number]> = { 1: ['a', 5], 2: ['b', 6], 3: ['a', 1], 4: ['c', 2] };
    const { batch } = batchOf('fires', 0, [1, 2, 3, 4], (o) => ({
      'tickwork-due-at': String(base + jobs[o]![1] * 1_000),
    }));
    const keyed = {
      ...batch,
      messages: batch.messages.map((m) => ({ ...m, key: Buffer.from(jobs[Number(m.offset)]![0]) })),
    };
    await flow.onBatch(keyed);
    await tick();
    // By due: 3 (a, +1 s), 4 (c, +2 s), 1 (a, +5 s), 2 (b, +6 s); job a keeps 1 before 3.
    expect(proc.groups).toEqual([['1', '4', '3', '2']]);
  });

  describe('after an assignment, with a backlog settle time', () => {
    const overdue = (base: number) => (o: number) => ({ 'tickwork-due-at': String(base + (o % 10) * 1_000) });

    it('holds a backlog until the other partitions with fires waiting have given theirs, then starts all in due order', async () => {
      const proc = new GroupingProcessor();
      const flow = new PartitionFlow(new Control(), new Slots(10), proc, {}, { backlogSettleMs: 60_000 });
      const base = Date.now() - 30_000;
      flow.onAssignment(new Map([['fires', [0, 1, 2]]]));
      expect(flow.settling).toBe(true);
      // Partitions 0 and 1 have fires waiting; 2 is caught up.
      flow.expectBacklog(new Map([['fires', [0, 1]]]));
      // Partition 0's backlog (due +5 s, +6 s) comes first: held, since 1 has not been heard from.
      await flow.onBatch(batchOf('fires', 0, [5, 6], overdue(base)).batch);
      await tick();
      expect(proc.started).toEqual([]);
      // Partition 1's (due +1 s, +2 s) comes a fetch later: both start together, most overdue first.
      await flow.onBatch(batchOf('fires', 1, [11, 12], overdue(base)).batch);
      await tick();
      expect(flow.settling).toBe(false);
      expect(proc.groups).toEqual([['11', '12', '5', '6']]);
    });

    it('starts fires on time at once, and the held backlog when the settle time is up', async () => {
      const proc = new GroupingProcessor();
      const flow = new PartitionFlow(new Control(), new Slots(10), proc, {}, { backlogSettleMs: 50 });
      flow.onAssignment(new Map([['fires', [0, 1, 2]]]));
      flow.expectBacklog(new Map([['fires', [0, 1]]]));
      await flow.onBatch(batchOf('fires', 2, [21], () => ({ 'tickwork-due-at': String(Date.now()) })).batch);
      expect(proc.started).toEqual(['21']);
      await flow.onBatch(batchOf('fires', 0, [3], overdue(Date.now() - 30_000)).batch);
      await tick();
      expect(proc.started).toEqual(['21']);
      // Partition 1 never answers: the settle time bounds the wait.
      const deadline = Date.now() + 5_000;
      while (!proc.started.includes('3') && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
      expect(proc.started).toEqual(['21', '3']);
      expect(flow.settling).toBe(false);
    });

    it('does not wait when every partition with fires waiting was heard from before the lag was known', async () => {
      const proc = new GroupingProcessor();
      const flow = new PartitionFlow(new Control(), new Slots(10), proc, {}, { backlogSettleMs: 60_000 });
      flow.onAssignment(new Map([['fires', [0, 1]]]));
      await flow.onBatch(batchOf('fires', 1, [12], overdue(Date.now() - 30_000)).batch);
      await tick();
      expect(proc.started).toEqual([]);
      flow.expectBacklog(new Map([['fires', [1]]]));
      await tick();
      expect(proc.started).toEqual(['12']);
      expect(flow.settling).toBe(false);
    });

    it('starts the held backlog as soon as the last partition awaited answers, even with fires on time', async () => {
      const proc = new GroupingProcessor();
      const flow = new PartitionFlow(new Control(), new Slots(10), proc, {}, { backlogSettleMs: 60_000 });
      flow.onAssignment(new Map([['fires', [0, 1]]]));
      flow.expectBacklog(new Map([['fires', [0, 1]]]));
      await flow.onBatch(batchOf('fires', 0, [5], overdue(Date.now() - 30_000)).batch);
      await tick();
      expect(proc.started).toEqual([]);
      await flow.onBatch(batchOf('fires', 1, [11], () => ({ 'tickwork-due-at': String(Date.now()) })).batch);
      await tick();
      expect([...proc.started].sort()).toEqual(['11', '5']);
      expect(flow.settling).toBe(false);
    });

    it('does not settle an assignment that follows another (an ordinary rebalance)', async () => {
      const proc = new GroupingProcessor();
      const flow = new PartitionFlow(new Control(), new Slots(10), proc, {}, { backlogSettleMs: 60_000 });
      flow.onAssignment(new Map([['fires', [0]]]));
      flow.expectBacklog(new Map([['fires', []]]));
      expect(flow.settling).toBe(false);
      flow.onAssignment(new Map([['fires', [0, 1]]]));
      expect(flow.settling).toBe(false);
      await flow.onBatch(batchOf('fires', 1, [5], overdue(Date.now() - 30_000)).batch);
      await tick();
      expect(proc.started).toEqual(['5']);
      // After the consumer lost the group (an empty assignment), the next one settles again.
      flow.onAssignment(new Map());
      flow.onAssignment(new Map([['fires', [0, 1]]]));
      expect(flow.settling).toBe(true);
    });

    it('without a settle time, a backlog starts as it comes', async () => {
      const proc = new GroupingProcessor();
      const flow = new PartitionFlow(new Control(), new Slots(10), proc);
      flow.onAssignment(new Map([['fires', [0, 1]]]));
      expect(flow.settling).toBe(false);
      await flow.onBatch(batchOf('fires', 0, [5], overdue(Date.now() - 30_000)).batch);
      await tick();
      expect(proc.started).toEqual(['5']);
    });
  });
});
