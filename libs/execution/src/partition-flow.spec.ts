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
  it('returns at once, pauses the partition, and marks offsets only up to the first unfinished message', async () => {
    const control = new Control();
    const proc = new ManualProcessor();
    const flow = new PartitionFlow(control, new Slots(10), proc);
    const { batch, marked } = batchOf('fires', 0, [10, 11, 12]);
    await flow.onBatch(batch);
    expect(control.paused.has('fires|0')).toBe(true);
    expect(proc.running()).toEqual(['10', '11', '12']);
    proc.finish('11');
    await tick();
    expect(marked).toEqual([]);
    proc.finish('10');
    await tick();
    expect(marked).toEqual(['11']);
    expect(control.paused.has('fires|0')).toBe(true);
    proc.finish('12');
    await tick();
    expect(marked).toEqual(['11', '12']);
    expect(control.paused.has('fires|0')).toBe(false);
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

    it('gathers the slots a settling group frees into the next group, across partitions', async () => {
      const proc = new GroupingProcessor();
      const slots = new Slots(4);
      const flow = new PartitionFlow(new Control(), slots, proc);
      const a = batchOf('fires', 0, [1, 2, 3, 4, 5, 6, 7, 8]);
      const b = batchOf('fires', 1, [11, 12, 13]);
      await flow.onBatch(a.batch);
      await flow.onBatch(b.batch);
      expect(proc.groups).toEqual([['1', '2', '3', '4']]);
      for (const o of ['1', '2', '3', '4']) proc.finish(o);
      await tick();
      await tick();
      // Each waiting partition was handed a slot; the rest of the freed slots joined them, so
      // they went out as one group per partition, not one message each.
      expect(proc.groups.slice(1)).toEqual([['5', '6', '7'], ['11']]);
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
  });
});
