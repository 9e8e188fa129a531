import type { FireEvent } from '@tickwork/domain';
import { dueEnd, OnTimeRelease, type ReleaseSink } from './on-time-release';

const T0 = Date.parse('2026-01-01T00:00:00Z');

function fire(id: string, dueMs: number): FireEvent {
  return {
    jobId: id,
    tenantId: 't',
    fenceToken: 1,
    fireId: `${id}:1`,
    scheduledFor: new Date(T0 + dueMs),
    nominalTime: new Date(T0 + dueMs),
    attempt: 1,
    target: { type: 'kafka', topic: 'x', key: null, headers: {} },
    payload: null,
  };
}

/** Records each send (fire ids and the clock) and lets the test settle or fail it. */
class RecordingSink implements ReleaseSink {
  readonly sends: { at: number; ids: string[]; encoded: boolean }[] = [];
  private pending: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  autoAck = true;

  send(events: readonly FireEvent[], encoded: readonly unknown[] | undefined): Promise<void> {
    this.sends.push({ at: Date.now() - T0, ids: events.map((e) => e.jobId), encoded: encoded !== undefined });
    if (this.autoAck) return Promise.resolve();
    return new Promise((resolve, reject) => this.pending.push({ resolve, reject }));
  }

  ack(): void {
    this.pending.shift()!.resolve();
  }

  fail(e: Error): void {
    this.pending.shift()!.reject(e);
  }
}

describe('dueEnd', () => {
  const sorted = [fire('a', 1_000), fire('b', 1_000), fire('c', 1_200)];

  it('takes every fire due by now, from where the last run ended', () => {
    expect(dueEnd(sorted, 0, T0 + 1_100)).toBe(2);
    expect(dueEnd(sorted, 0, T0 + 999)).toBe(0);
    expect(dueEnd(sorted, 2, T0 + 5_000)).toBe(3);
  });
});

describe('OnTimeRelease', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('sends each fire at its time, never before, with the due fires of every batch in one send', async () => {
    const sink = new RecordingSink();
    const release = new OnTimeRelease(sink, 10);
    let aDone = false;
    let bDone = false;
    const a = release.hold([fire('a1', 100), fire('a2', 100), fire('a3', 300)]);
    void a.then(() => (aDone = true));
    void release.hold([fire('b1', 100), fire('b2', 200)], ['m1', 'm2'] as never).then(() => (bDone = true));

    await jest.advanceTimersByTimeAsync(99);
    expect(sink.sends).toEqual([]);
    await jest.advanceTimersByTimeAsync(20);
    expect(sink.sends).toEqual([{ at: 110, ids: ['a1', 'a2', 'b1'], encoded: false }]);
    await jest.advanceTimersByTimeAsync(100);
    expect(sink.sends[1]).toEqual({ at: 210, ids: ['b2'], encoded: true });
    expect(bDone).toBe(true);
    expect(aDone).toBe(false);
    expect(release.size).toBe(1);
    await jest.advanceTimersByTimeAsync(100);
    expect(sink.sends[2]).toEqual({ at: 310, ids: ['a3'], encoded: false });
    expect(aDone).toBe(true);
    expect(release.size).toBe(0);
    // When Kafka acknowledged each, for the enqueue-lateness metric.
    await expect(a).resolves.toEqual([T0 + 110, T0 + 110, T0 + 310]);
  });

  it('sends fires already due at once', async () => {
    const sink = new RecordingSink();
    const release = new OnTimeRelease(sink, 10);
    await release.hold([fire('late', -500)]);
    expect(sink.sends).toEqual([{ at: 0, ids: ['late'], encoded: false }]);
  });

  it('sends one batch of due fires at a time; what comes due meanwhile goes in the next send', async () => {
    const sink = new RecordingSink();
    sink.autoAck = false;
    const release = new OnTimeRelease(sink, 10);
    void release.hold([fire('x', 0), fire('y', 50)]);
    void release.hold([fire('z', 60)]);
    await jest.advanceTimersByTimeAsync(0);
    expect(sink.sends.map((s) => s.ids)).toEqual([['x']]);
    await jest.advanceTimersByTimeAsync(100);
    expect(sink.sends).toHaveLength(1);
    sink.ack();
    await jest.advanceTimersByTimeAsync(0);
    expect(sink.sends.map((s) => s.ids)).toEqual([['x'], ['y', 'z']]);
  });

  it('fails the batches of a failed send and goes on with the others', async () => {
    const sink = new RecordingSink();
    sink.autoAck = false;
    const release = new OnTimeRelease(sink, 10);
    const a = release.hold([fire('a', 0), fire('a-later', 500)]);
    const b = release.hold([fire('b', 100)]);
    const aFailed = expect(a).rejects.toThrow('broker down');
    await jest.advanceTimersByTimeAsync(0);
    sink.fail(new Error('broker down'));
    await aFailed;
    await jest.advanceTimersByTimeAsync(200);
    expect(sink.sends.map((s) => s.ids)).toEqual([['a'], ['b']]);
    sink.ack();
    await expect(b).resolves.toEqual([T0 + 200]);
    // The failed batch's later fire is not sent: its batch stays in the outbox for the relay.
    await jest.advanceTimersByTimeAsync(1_000);
    expect(sink.sends).toHaveLength(2);
  });
});
