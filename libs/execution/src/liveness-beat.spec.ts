import { LivenessBeat, type LivenessStore } from './liveness-beat';

/** A store that records what it was told, failing the beats it is told to fail. */
class RecordingStore implements LivenessStore {
  readonly beats: { issuer: string; instanceId: string; continuityMs: number }[] = [];
  readonly retired: string[] = [];
  forgets = 0;
  failNext = 0;

  beat(issuer: string, instanceId: string, continuityMs: number): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      return Promise.reject(new Error('connection refused'));
    }
    this.beats.push({ issuer, instanceId, continuityMs });
    return Promise.resolve();
  }
  retire(issuer: string): Promise<void> {
    this.retired.push(issuer);
    return Promise.resolve();
  }
  forgetSilent(): Promise<number> {
    this.forgets++;
    return Promise.resolve(0);
  }
}

describe('LivenessBeat', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('beats at start and then every interval, with a continuity of 2.5 intervals by default', async () => {
    const store = new RecordingStore();
    const beat = new LivenessBeat(store, { issuer: 'iss-1', instanceId: 'exec-1', intervalMs: 1_000 });
    await beat.start();
    expect(store.beats).toEqual([{ issuer: 'iss-1', instanceId: 'exec-1', continuityMs: 2_500 }]);
    expect(store.forgets).toBe(1);
    await jest.advanceTimersByTimeAsync(3_000);
    expect(store.beats).toHaveLength(4);
    // Long-dead rows are cleaned up now and then, not at every beat.
    expect(store.forgets).toBe(1);
    await beat.stop(false);
  });

  it('reports a failed beat and keeps beating', async () => {
    const store = new RecordingStore();
    const errors: string[] = [];
    store.failNext = 2;
    const beat = new LivenessBeat(store, {
      issuer: 'iss-2',
      instanceId: 'exec-2',
      onError: (e) => errors.push(e.message),
    });
    await beat.start();
    await jest.advanceTimersByTimeAsync(2_000);
    expect(errors).toEqual(['connection refused', 'connection refused']);
    expect(store.beats).toHaveLength(1);
    await beat.stop(false);
  });

  it('stops beating; retires its row only when told its leases are done', async () => {
    const store = new RecordingStore();
    const kept = new LivenessBeat(store, { issuer: 'iss-3', instanceId: 'exec-3' });
    await kept.start();
    await kept.stop(false);
    await jest.advanceTimersByTimeAsync(5_000);
    expect(store.beats).toHaveLength(1);
    expect(store.retired).toEqual([]);

    const retired = new LivenessBeat(store, { issuer: 'iss-4', instanceId: 'exec-4' });
    await retired.start();
    await retired.stop(true);
    expect(store.retired).toEqual(['iss-4']);
  });
});
