/**
 * The cluster view's consumer lag: read from Kafka at most once per TTL and shared by the views
 * within it (a fake clock and in-memory ports: no I/O).
 */
import type { Caller } from './caller';
import { InsightService, type LagSource } from './insight-service';
import type { ClusterStatsStore, InsightStore, JobStore } from './ports';

const admin: Caller = { actor: 'root', role: 'admin', tenantId: null, via: 'rest' };

function setup(ttlMs = 2_000) {
  let now = 1_000_000;
  let reads = 0;
  let end = 10;
  const lag: LagSource = {
    groups: [{ group: 'g.executor', topic: 't.fires' }],
    groupLag: () => {
      reads++;
      return Promise.resolve([{ partition: 0, committed: '4', end: String(end) }]);
    },
  };
  const insight = {
    shardLeases: () => Promise.resolve([]),
    inFlight: () => Promise.resolve([]),
  } as unknown as InsightStore;
  const stats = {
    dueBacklog: () => Promise.resolve([]),
    outbox: () => Promise.resolve([]),
  } as unknown as ClusterStatsStore;
  const service = new InsightService(insight, stats, {} as JobStore, lag, 0, () => now, ttlMs);
  return {
    service,
    reads: () => reads,
    advance: (ms: number) => (now += ms),
    setEnd: (n: number) => (end = n),
  };
}

describe('the cluster view reads consumer lag at most once per TTL', () => {
  it('shares one reading within the TTL, and reads again after it', async () => {
    const t = setup();
    expect((await t.service.cluster(admin)).consumerLag).toEqual([
      { group: 'g.executor', topic: 't.fires', lag: 6, partitions: 1 },
    ]);
    t.setEnd(20);
    t.advance(1_999);
    expect((await t.service.cluster(admin)).consumerLag[0]?.lag).toBe(6);
    expect(t.reads()).toBe(1);
    t.advance(1);
    expect((await t.service.cluster(admin)).consumerLag[0]?.lag).toBe(16);
    expect(t.reads()).toBe(2);
  });

  it('lets views asked at the same time wait for one reading', async () => {
    const t = setup();
    await Promise.all([t.service.cluster(admin), t.service.cluster(admin), t.service.cluster(admin)]);
    expect(t.reads()).toBe(1);
  });

  it('reads every time with a TTL of 0', async () => {
    const t = setup(0);
    await t.service.cluster(admin);
    await t.service.cluster(admin);
    expect(t.reads()).toBe(2);
  });

  it('still refuses a tenant, before reading anything', async () => {
    const t = setup();
    await expect(t.service.cluster({ ...admin, role: 'tenant', tenantId: 'acme' })).rejects.toThrow(/admins/);
    expect(t.reads()).toBe(0);
  });
});
