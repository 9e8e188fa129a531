import { Readiness } from './readiness';

describe('Readiness', () => {
  it('is ready when every check passes, and names each', async () => {
    const r = new Readiness({ postgres: () => undefined, kafka: async () => undefined });
    expect(await r.report()).toEqual({ ready: true, checks: { postgres: 'up', kafka: 'up' } });
  });

  it('is not ready when a check throws or does not answer in time, and says why', async () => {
    const r = new Readiness(
      {
        postgres: () => undefined,
        kafka: () => Promise.reject(new Error('connection refused')),
        shards: () => new Promise<void>(() => undefined),
      },
      { timeoutMs: 50 },
    );
    expect(await r.report()).toEqual({
      ready: false,
      checks: { postgres: 'up', kafka: 'down: connection refused', shards: 'down: no answer within 50 ms' },
    });
  });

  it('runs the checks at most once per cache period', async () => {
    let runs = 0;
    const r = new Readiness({ db: () => void runs++ }, { cacheMs: 60_000 });
    await Promise.all([r.report(), r.report(), r.report()]);
    expect(runs).toBe(1);
    const fresh = new Readiness({ db: () => void runs++ }, { cacheMs: 0 });
    await fresh.report();
    await fresh.report();
    expect(runs).toBe(3);
  });
});
