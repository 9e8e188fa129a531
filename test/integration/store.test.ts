/**
 * The schedule store against real PostgreSQL: migrations under concurrency, the fenced claim,
 * the outbox, shard lease epochs, and the run ledger's lease tokens.
 */
import {
  ClusterStatsRepository,
  createPool,
  FireStore,
  JobRepository,
  listMigrations,
  migrate,
  RunRepository,
  ShardLeaseRepository,
} from '@tickwork/store';
import {
  DEFAULT_POLICIES,
  planDueOccurrences,
  targetToWire,
  type ClaimPlanner,
  type FireEvent,
  type JobDefinition,
} from '@tickwork/domain';
import { testDatabase, type TestDatabase } from '../support/db';
import { claimWith } from '../support/fire-loop';
import { eventually } from '../support/env';

const fireOnce: ClaimPlanner = ({ job }, _now) => ({
  fires: [{ nominalTime: job.nextNominalAt!, scheduledFor: job.nextRunAt! }],
  skips: [],
  next: null,
});
const dueAt = (d: Date) => ({ nominalTime: d, scheduledFor: d });

function definition(jobId: string, tenantId = 'acme'): JobDefinition {
  return {
    jobId,
    tenantId,
    schedule: { kind: 'once', at: new Date(Date.now() - 1_000) },
    target: {
      type: 'webhook',
      url: 'https://example.com/x',
      method: 'POST',
      headers: {},
      timeoutMs: 1_000,
      successStatus: { min: 200, max: 299 },
    },
    payload: { n: 1 },
    policies: DEFAULT_POLICIES,
    labels: {},
  };
}

function ledgerFire(jobId: string, fenceToken: number): FireEvent {
  return {
    jobId,
    tenantId: 'acme',
    fenceToken,
    fireId: `${jobId}:${fenceToken}`,
    scheduledFor: new Date(),
    nominalTime: new Date(),
    attempt: 1,
    target: { type: 'kafka', topic: 't', key: null, headers: {} },
    payload: null,
  };
}

describe('schedule store', () => {
  let db: TestDatabase;
  let jobs: JobRepository;
  let fires: FireStore;
  let leases: ShardLeaseRepository;
  let runs: RunRepository;

  beforeAll(async () => {
    db = await testDatabase('store');
    jobs = new JobRepository(db.pool);
    fires = new FireStore(db.pool);
    leases = new ShardLeaseRepository(db.pool);
    runs = new RunRepository(db.pool);
  });
  afterAll(async () => db.close());

  it("runs its sessions with JIT compilation off and its timeouts, whatever the server's defaults", async () => {
    const pool = createPool(db.iso.databaseUrl, { max: 1, statementTimeoutMs: 12_345 });
    try {
      const { rows } = await pool.query<{ jit: string; statement_timeout: string; lock_timeout: string }>(
        `SELECT current_setting('jit') AS jit, current_setting('statement_timeout') AS statement_timeout,
                current_setting('lock_timeout') AS lock_timeout`,
      );
      // The server's jit is on by default: compiling the claim's due read cost 870 ms a call.
      expect(rows[0]).toEqual({ jit: 'off', statement_timeout: '12345ms', lock_timeout: '5s' });
    } finally {
      await pool.end();
    }
  });

  it('applies migrations once even when several processes migrate at the same time', async () => {
    const pools = [1, 2, 3].map(() => createPool(db.iso.databaseUrl, { max: 1 }));
    try {
      const applied = await Promise.all(pools.map((p) => migrate(p)));
      expect(applied.flat()).toEqual([]); // already migrated by testDatabase: nothing re-applied
      const { rows } = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM schema_migrations');
      expect(Number(rows[0]!.n)).toBeGreaterThanOrEqual(1);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  it('moves existing fires into outbox batches without changing what was enqueued (migration 6)', async () => {
    const old = await testDatabase('store-mig6', {
      migrations: listMigrations().filter((m) => m.version < 6),
    });
    try {
      const event = (jobId: string, token: number) =>
        JSON.stringify({
          job_id: jobId,
          tenant_id: 'acme',
          fence_token: token,
          fire_id: `${jobId}:${token}`,
          scheduled_for: '2026-01-02T03:04:00.000Z',
          nominal_time: '2026-01-02T03:04:00.000Z',
          attempt: 1,
          target: targetToWire({ type: 'kafka', topic: 't', key: null, headers: {} }),
          payload: null,
        });
      await old.pool.query(
        `INSERT INTO fires (job_id, fence_token, tenant_id, shard, nominal_time, scheduled_for, trigger, claimed_by, enqueued_at, event)
         VALUES ('m-1', 1, 'acme', 2, now(), now(), 'SCHEDULE', 'a', '2026-01-02T03:04:05Z', $1),
                ('m-1', 2, 'acme', 2, now() + interval '1 s', now(), 'MANUAL', 'api', NULL, $2),
                ('m-2', 1, 'acme', 5, now(), now(), 'SCHEDULE', 'a', NULL, $3)`,
        [event('m-1', 1), event('m-1', 2), event('m-2', 1)],
      );
      await migrate(old.pool);
      const { rows } = await old.pool.query<{
        job_id: string;
        fence_token: string;
        enqueued_at: Date | null;
      }>('SELECT job_id, fence_token, enqueued_at FROM fire_log ORDER BY job_id, fence_token');
      expect(
        rows.map((r) => [r.job_id, Number(r.fence_token), r.enqueued_at?.toISOString() ?? null]),
      ).toEqual([
        ['m-1', 1, '2026-01-02T03:04:05.000Z'],
        ['m-1', 2, null],
        ['m-2', 1, null],
      ]);
      const oldLeases = new ShardLeaseRepository(old.pool);
      const held = await oldLeases.acquire([2, 5], 'heir', 30_000);
      const pending = await new FireStore(old.pool).pendingFires({
        owner: 'heir',
        shards: held,
        minAgeMs: 0,
        limit: 10,
      });
      expect(pending.map((p) => `${p.event.jobId}:${p.event.fenceToken}`).sort()).toEqual(['m-1:2', 'm-2:1']);
    } finally {
      await old.close();
    }
  });

  it('lets exactly one of many concurrent claimers win each due job', async () => {
    const ids = Array.from({ length: 200 }, (_, i) => `race-${i}`);
    for (const id of ids)
      await jobs.insertJob({
        definition: definition(id),
        shard: 0,
        next: dueAt(new Date(Date.now() - 1_000)),
      });
    // Five claimers share the lease of shard 0 (same owner and epoch), racing on the same rows.
    const [lease] = await leases.acquire([0], 'racer', 30_000);
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        claimWith(fires, { owner: 'racer', shards: [lease!], limit: 100, lookaheadMs: 0 }, fireOnce),
      ),
    );
    let more = await claimWith(
      fires,
      { owner: 'racer', shards: [lease!], limit: 1000, lookaheadMs: 0 },
      fireOnce,
    );
    const claimed = [...results.flatMap((r) => r.fires), ...more.fires]
      .map((f) => f.event.jobId)
      .filter((id) => id.startsWith('race-'));
    expect(claimed.sort()).toEqual([...ids].sort());
    expect(new Set(claimed).size).toBe(ids.length);
    more = await claimWith(
      fires,
      { owner: 'racer', shards: [lease!], limit: 1000, lookaheadMs: 0 },
      fireOnce,
    );
    expect(more.fires).toHaveLength(0);
    const { rows } = await db.pool.query<{ status: string; fence_token: string }>(
      `SELECT DISTINCT status, fence_token FROM jobs WHERE job_id LIKE 'race-%'`,
    );
    expect(rows).toEqual([{ status: 'COMPLETED', fence_token: 1 }]);
  });

  it('fences out a claimer whose shard was taken over (epoch bump)', async () => {
    await jobs.insertJob({
      definition: definition('fenced-1'),
      shard: 1,
      next: dueAt(new Date(Date.now() - 1_000)),
    });
    const [old] = await leases.acquire([1], 'old-owner', 30_000);
    const [taken] = await leases.acquire([1], 'new-owner', 30_000);
    expect(taken!.epoch).toBe(old!.epoch + 1);
    const stale = await claimWith(
      fires,
      { owner: 'old-owner', shards: [old!], limit: 10, lookaheadMs: 0 },
      fireOnce,
    );
    expect(stale.fencedOut).toEqual([1]);
    expect(stale.fires).toHaveLength(0);
    expect(await leases.renew([old!], 'old-owner', 30_000)).toEqual([]);
    const fresh = await claimWith(
      fires,
      { owner: 'new-owner', shards: [taken!], limit: 10, lookaheadMs: 0 },
      fireOnce,
    );
    expect(fresh.fires.map((f) => f.event.jobId)).toEqual(['fenced-1']);
  });

  it("a claim in flight holds off a takeover but not its owner's lease renewal, then is fenced out", async () => {
    await jobs.insertJob({
      definition: definition('in-flight-1'),
      shard: 2,
      next: dueAt(new Date(Date.now() - 1_000)),
    });
    const [old] = await leases.acquire([2], 'a', 30_000);
    // Hold a real claim of "a" mid-transaction: it has locked its lease row and its job, and
    // waits to open its outbox batch while another session holds fire_batches.
    const blocker = await db.pool.connect();
    const waitingOn = (queryStart: string) =>
      eventually(`a statement starting "${queryStart}" to wait on a lock`, async () => {
        const { rows } = await db.pool.query<{ n: string }>(
          `SELECT count(*) AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`,
          [`${queryStart}%`],
        );
        return Number(rows[0]!.n) > 0 ? true : undefined;
      });
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE fire_batches IN EXCLUSIVE MODE');
      const claim = claimWith(fires, { owner: 'a', shards: [old!], limit: 10, lookaheadMs: 0 }, fireOnce);
      await waitingOn('WITH u AS');

      // The owner's renewal goes through at once, however long the claim takes.
      let timer: NodeJS.Timeout | undefined;
      const renewal = await Promise.race([
        leases.renew([old!], 'a', 30_000),
        new Promise<'still waiting after 5 s'>(
          (r) => (timer = setTimeout(() => r('still waiting after 5 s'), 5_000)),
        ),
      ]).finally(() => clearTimeout(timer));
      expect(renewal).toEqual([2]);

      // A takeover is seen blocked on the lease row lock in pg_stat_activity, not merely slow.
      let taken = false;
      const takeover = leases.acquire([2], 'b', 30_000).then((r) => {
        taken = true;
        return r;
      });
      await waitingOn('INSERT INTO shard_leases');
      expect(taken).toBe(false);

      await blocker.query('COMMIT');
      expect((await claim).fires.map((f) => f.event.jobId)).toEqual(['in-flight-1']);
      const [b] = await takeover;
      expect(b!.epoch).toBe(old!.epoch + 1);
    } finally {
      blocker.release();
    }
    const after = await claimWith(fires, { owner: 'a', shards: [old!], limit: 10, lookaheadMs: 0 }, fireOnce);
    expect(after.fencedOut).toEqual([2]);
  });

  it('keeps claimed fires in the outbox until they are marked enqueued, and hands them to the next owner', async () => {
    await jobs.insertJob({
      definition: definition('outbox-1'),
      shard: 3,
      next: dueAt(new Date(Date.now() - 1_000)),
    });
    const [mine] = await leases.acquire([3], 'crashy', 30_000);
    const claim = await claimWith(
      fires,
      { owner: 'crashy', shards: [mine!], limit: 10, lookaheadMs: 0 },
      fireOnce,
    );
    expect(claim.fires).toHaveLength(1);
    // "crashy" dies before publishing. The next owner finds the fire in the outbox.
    const [next] = await leases.acquire([3], 'heir', 30_000);
    const pending = await fires.pendingFires({ owner: 'heir', shards: [next!], minAgeMs: 0, limit: 10 });
    expect(pending.map((p) => [p.event.jobId, p.event.fenceToken])).toEqual([['outbox-1', 1]]);
    expect(pending[0]!.event.target).toEqual(claim.fires[0]!.event.target);
    // A zombie cannot read the outbox of a shard it lost.
    expect(await fires.pendingFires({ owner: 'crashy', shards: [mine!], minAgeMs: 0, limit: 10 })).toEqual(
      [],
    );
    expect(pending[0]!.batchId).toBe(claim.fires[0]!.batchId);
    // A batch the caller is still publishing itself is not handed to its relay.
    expect(
      await fires.pendingFires({
        owner: 'heir',
        shards: [next!],
        minAgeMs: 0,
        limit: 10,
        exclude: [pending[0]!.batchId],
      }),
    ).toEqual([]);
    await fires.markEnqueued([pending[0]!.batchId]);
    expect(await fires.pendingFires({ owner: 'heir', shards: [next!], minAgeMs: 0, limit: 10 })).toEqual([]);
  });

  it("stores a claimed fire without a copy of its job's target and payload; the relay rebuilds the published event, with the pair frozen when the job changes or goes", async () => {
    for (const id of ['snap-1', 'snap-2', 'snap-3'])
      await jobs.insertJob({
        definition: definition(id),
        shard: 8,
        next: dueAt(new Date(Date.now() - 1_000)),
      });
    const [l] = await leases.acquire([8], 'snap', 30_000);
    const slot = new Date(Math.floor(Date.now() / 1_000) * 1_000 - 500);
    const claim = await claimWith(
      fires,
      { owner: 'snap', shards: [l!], limit: 10, lookaheadMs: 0 },
      ({ job }) => ({
        fires: [{ nominalTime: job.nextNominalAt!, scheduledFor: slot, spreadOffsetMs: 250 }],
        skips: [],
        next: null,
      }),
    );
    // dueSince rides as a Kafka header, never in the stored event.
    const published = new Map(claim.fires.map(({ event: { dueSince: _, ...e } }) => [e.jobId, e]));
    expect(published.get('snap-1')!.fireId).toBe('snap-1:1');
    const { rows } = await db.pool.query<{ job_id: string; event: unknown }>(
      `SELECT job_id, event FROM fires WHERE job_id LIKE 'snap-%' ORDER BY job_id`,
    );
    expect(rows).toEqual([
      { job_id: 'snap-1', event: null },
      { job_id: 'snap-2', event: null },
      { job_id: 'snap-3', event: null },
    ]);
    // snap-2's payload and target change and snap-3 is deleted before the relay reads them: each
    // keeps what it was claimed with. (By SQL, not the repositories: the trigger sees every path.)
    await db.pool.query(
      `UPDATE jobs SET payload = '{"n": 2}', target = jsonb_set(target, '{url}', '"http://127.0.0.1:9/changed"'),
              version = version + 1 WHERE job_id = 'snap-2'`,
    );
    await db.pool.query(`DELETE FROM jobs WHERE job_id = 'snap-3'`);
    const frozen = await db.pool.query<{ job_id: string; event: unknown }>(
      `SELECT job_id, event FROM fires WHERE job_id LIKE 'snap-%' AND event IS NOT NULL ORDER BY job_id`,
    );
    expect(frozen.rows.map((r) => r.job_id)).toEqual(['snap-2', 'snap-3']);
    expect(frozen.rows[0]!.event).toEqual({
      target: targetToWire(published.get('snap-2')!.target),
      payload: published.get('snap-2')!.payload,
    });
    const relayed = await fires.pendingFires({ owner: 'snap', shards: [l!], minAgeMs: 0, limit: 10 });
    expect(new Map(relayed.map((f) => [f.event.jobId, f.event]))).toEqual(published);
    expect(published.get('snap-1')).toMatchObject({ spreadOffsetMs: 250, payload: { n: 1 }, attempt: 1 });
  });

  it("keeps a dead letter's event as claimed when its job changes after the batch went out, and freezes no fire that ran", async () => {
    for (const id of ['dl-1', 'dl-2'])
      await jobs.insertJob({
        definition: definition(id),
        shard: 9,
        next: dueAt(new Date(Date.now() - 1_000)),
      });
    const [l] = await leases.acquire([9], 'dl', 30_000);
    const claim = await claimWith(fires, { owner: 'dl', shards: [l!], limit: 10, lookaheadMs: 0 }, fireOnce);
    expect(claim.fires).toHaveLength(2);
    await fires.markEnqueued(claim.fires.map((f) => f.batchId));
    // dl-1's fire was dead-lettered, dl-2's succeeded.
    for (const [id, status] of [
      ['dl-1', 'DEAD_LETTERED'],
      ['dl-2', 'SUCCEEDED'],
    ])
      await db.pool.query(
        `INSERT INTO job_runs (job_id, fence_token, tenant_id, fire_id, nominal_time, scheduled_for, status, finished_at)
         VALUES ($1::text, 1, 'acme', $1::text || ':1', now(), now(), $2, now())`,
        [id, status],
      );
    await db.pool.query(
      `UPDATE jobs SET payload = '{"n": 99}', version = version + 1 WHERE job_id LIKE 'dl-%'`,
    );
    const { rows } = await db.pool.query<{ job_id: string; event: unknown }>(
      `SELECT job_id, event FROM fires WHERE job_id LIKE 'dl-%' ORDER BY job_id`,
    );
    expect(rows.map((r) => [r.job_id, (r.event as { payload?: unknown } | null)?.payload ?? null])).toEqual([
      ['dl-1', { n: 1 }],
      ['dl-2', null],
    ]);
    const meta = {
      audit: { actor: 'test', role: 'admin', via: 'rest', action: 'ReplayDeadLetter' },
    } as const;
    const dead = await jobs.mutate('dl-1', meta, (_job, tx) => tx.deadLetter(1));
    expect(dead!.event).toMatchObject({ fireId: 'dl-1:1', payload: { n: 1 }, attempt: 1 });
  });

  it('relays a batch claimed ahead only once it is the relay age past its release time, and counts it as pending, not overdue', async () => {
    const dueIn = 3_000;
    await jobs.insertJob({
      definition: definition('ahead-1'),
      shard: 61,
      next: dueAt(new Date(Date.now() + dueIn)),
    });
    const [mine] = await leases.acquire([61], 'ahead', 30_000);
    const claim = await claimWith(
      fires,
      { owner: 'ahead', shards: [mine!], limit: 10, lookaheadMs: 10_000 },
      fireOnce,
    );
    const scheduledFor = claim.fires[0]!.event.scheduledFor.getTime();
    const relayable = async () => ({
      pending: (await fires.pendingFires({ owner: 'ahead', shards: [mine!], minAgeMs: 0, limit: 10 })).map(
        (p) => p.event.jobId,
      ),
      probed: (await fires.probeDue({ owner: 'ahead', shards: [mine!], lookaheadMs: 0, relayAgeMs: 0 }))
        .relay,
    });
    // Claimed ahead, even a relay age of 0 leaves it to its claimer until its time.
    expect(await relayable()).toEqual({ pending: [], probed: [] });
    const stats = new ClusterStatsRepository(db.pool);
    const held = (await stats.outbox(62)).find((o) => o.shard === 61)!;
    expect(held.pending).toBe(1);
    expect(held.oldestAgeSeconds).toBe(0);
    expect(Date.now()).toBeLessThan(scheduledFor); // all of the above ran before the fire's time

    // Past its time it is orphaned (its claimer never published it): the relay takes it.
    const after = await eventually('the held batch to become relayable', async () => {
      const r = await relayable();
      return r.pending.length > 0 ? r : undefined;
    });
    expect(Date.now()).toBeGreaterThanOrEqual(scheduledFor);
    expect(after).toEqual({ pending: ['ahead-1'], probed: [61] });
    // With a relay age, not before that age past its time.
    expect(
      await fires.pendingFires({ owner: 'ahead', shards: [mine!], minAgeMs: 60_000, limit: 10 }),
    ).toEqual([]);
    expect((await stats.outbox(62)).find((o) => o.shard === 61)!.oldestAgeSeconds).toBeGreaterThan(0);
  });

  it('probes held shards in one statement: due tenants, fenced shards, and outbox batches to relay', async () => {
    await jobs.insertJob({
      definition: definition('probe-due', 'probe-t1'),
      shard: 51,
      next: dueAt(new Date(Date.now() - 1_000)),
    });
    await jobs.insertJob({
      definition: definition('probe-later', 'probe-t2'),
      shard: 51,
      next: dueAt(new Date(Date.now() + 600_000)),
    });
    const [mine, other] = await leases.acquire([51, 52], 'prober', 30_000);
    const probe = () =>
      fires.probeDue({ owner: 'prober', shards: [mine!, other!], lookaheadMs: 0, relayAgeMs: 60_000 });

    const before = await probe();
    expect([...before.held].sort()).toEqual([51, 52]);
    expect(before.due).toEqual([{ shard: 51, tenant_id: 'probe-t1' }]);
    expect(before.relay).toEqual([]);

    // A claim from the probe's answer; its batch is in the outbox but young: nothing to relay yet.
    const claim = await claimWith(
      fires,
      { owner: 'prober', shards: [mine!], limit: 10, lookaheadMs: 0, probe: before },
      fireOnce,
    );
    expect(claim.fires.map((f) => f.event.jobId)).toEqual(['probe-due']);
    const after = await probe();
    expect(after.due).toEqual([]);
    expect(after.relay).toEqual([]);
    // Past the relay age, the unconfirmed batch is reported for its shard, until it is marked enqueued.
    const aged = await fires.probeDue({
      owner: 'prober',
      shards: [mine!, other!],
      lookaheadMs: 0,
      relayAgeMs: 0,
    });
    expect(aged.relay).toEqual([51]);
    // Without a relay age (a claim's own probe) the outbox is not looked at.
    expect((await fires.probeDue({ owner: 'prober', shards: [mine!], lookaheadMs: 0 })).relay).toEqual([]);
    await fires.markEnqueued([claim.fires[0]!.batchId]);
    expect(
      (await fires.probeDue({ owner: 'prober', shards: [mine!], lookaheadMs: 0, relayAgeMs: 0 })).relay,
    ).toEqual([]);

    // A lost lease shows up as a shard missing from `held`.
    await leases.acquire([52], 'thief', 30_000);
    expect((await probe()).held).toEqual([51]);
  });

  it('never fires an occurrence twice: a second claim of it fires nothing and leaves no empty batch', async () => {
    await jobs.insertJob({
      definition: definition('dup-occ'),
      shard: 4,
      next: dueAt(new Date('2026-01-01T00:00:00Z')),
    });
    const [l] = await leases.acquire([4], 'x', 30_000);
    const sameOccurrenceForever: ClaimPlanner = ({ job }) => ({
      fires: [
        { nominalTime: new Date('2026-01-01T00:00:00Z'), scheduledFor: new Date('2026-01-01T00:00:00Z') },
      ],
      skips: [],
      next: dueAt(job.nextNominalAt!),
    });
    const first = await claimWith(
      fires,
      { owner: 'x', shards: [l!], limit: 10, lookaheadMs: 0 },
      sameOccurrenceForever,
    );
    expect(first.fires.map((f) => f.event.fireId)).toEqual(['dup-occ:1']);
    // A schedule change after an early claim can plan the same occurrence again.
    const again = await claimWith(
      fires,
      { owner: 'x', shards: [l!], limit: 10, lookaheadMs: 0 },
      sameOccurrenceForever,
    );
    expect(again.fires).toEqual([]);
    const rows = await db.pool.query<{ fence_token: number; batch_fires: number }>(
      `SELECT f.fence_token, b.fires AS batch_fires
         FROM fires f JOIN fire_batches b USING (batch_id) WHERE f.job_id = 'dup-occ'`,
    );
    expect(rows.rows).toEqual([{ fence_token: 1, batch_fires: 1 }]);
    const batches = await db.pool.query(
      `SELECT b.batch_id FROM fire_batches b WHERE b.shard = 4
          AND NOT EXISTS (SELECT 1 FROM fires f WHERE f.batch_id = b.batch_id)`,
    );
    expect(batches.rows).toEqual([]);
  });

  it('claims two occurrences at one instant (dst_gap SHIFT) as two fires, the cursor keeping the second', async () => {
    // 45 0-3 * * * in New York on 2026-03-08: 02:45 does not exist and fires at 03:45 EDT, where
    // 03:45 also fires. Both are occurrences; the job's cursor is (next_nominal_at, next_dst_shift_ms).
    const shared = new Date('2026-03-08T07:45:00Z');
    const gap = 3_600_000;
    const schedule = {
      kind: 'cron' as const,
      expression: '45 0-3 * * *',
      timeZone: 'America/New_York',
      dstGap: 'SHIFT' as const,
      dstRepeat: 'AUTO' as const,
      endAt: new Date('2026-03-08T08:00:00Z'),
    };
    const policies = { ...DEFAULT_POLICIES, misfire: 'FIRE_ALL' as const };
    await jobs.insertJob({
      definition: { ...definition('dst-shared'), schedule, policies },
      shard: 71,
      next: { nominalTime: shared, scheduledFor: shared, dstShiftMs: gap },
    });
    const stored = await db.pool.query(`SELECT next_dst_shift_ms FROM jobs WHERE job_id = 'dst-shared'`);
    expect(stored.rows).toEqual([{ next_dst_shift_ms: gap }]);
    const [l] = await leases.acquire([71], 'x', 30_000);
    // A claim that fires only the moved 02:45 (as a lookahead reaching no further would).
    const onlyTheFirst: ClaimPlanner = ({ job }) => ({
      fires: [
        { nominalTime: job.nextNominalAt!, scheduledFor: job.nextNominalAt!, dstShiftMs: job.nextDstShiftMs },
      ],
      skips: [],
      next: { nominalTime: shared, scheduledFor: shared, dstShiftMs: 0 },
    });
    const first = await claimWith(
      fires,
      { owner: 'x', shards: [l!], limit: 10, lookaheadMs: 0 },
      onlyTheFirst,
    );
    expect(first.fires.map((f) => f.event.fireId)).toEqual(['dst-shared:1']);
    // The domain's planner, from the stored cursor: the 03:45 that exists, not 02:45 again, not skipped.
    const domainPlanner: ClaimPlanner = ({ job }, now) =>
      planDueOccurrences(job, job.nextNominalAt!, now, { maxCatchUp: 10, herdJitterMs: 0 });
    const second = await claimWith(
      fires,
      { owner: 'x', shards: [l!], limit: 10, lookaheadMs: 0 },
      domainPlanner,
    );
    expect(second.fires.map((f) => [f.event.fireId, f.event.nominalTime.toISOString()])).toEqual([
      ['dst-shared:2', shared.toISOString()],
    ]);
    const rows = await db.pool.query(
      `SELECT fence_token::int, nominal_time, dst_shift_ms FROM fires WHERE job_id = 'dst-shared' ORDER BY fence_token`,
    );
    expect(rows.rows).toEqual([
      { fence_token: 1, nominal_time: shared, dst_shift_ms: gap },
      { fence_token: 2, nominal_time: shared, dst_shift_ms: 0 },
    ]);
    const job = await db.pool.query(`SELECT status, fires_count::int FROM jobs WHERE job_id = 'dst-shared'`);
    expect(job.rows).toEqual([{ status: 'COMPLETED', fires_count: 2 }]);
  });

  it('the domain planner claims both occurrences of one instant in one claim, each with its fence token', async () => {
    const shared = new Date('2026-03-08T07:45:00Z');
    const schedule = {
      kind: 'cron' as const,
      expression: '45 0-3 * * *',
      timeZone: 'America/New_York',
      dstGap: 'SHIFT' as const,
      dstRepeat: 'AUTO' as const,
      endAt: new Date('2026-03-08T08:00:00Z'),
    };
    const policies = { ...DEFAULT_POLICIES, misfire: 'FIRE_ALL' as const };
    await jobs.insertJob({
      definition: { ...definition('dst-both'), schedule, policies },
      shard: 72,
      next: { nominalTime: new Date('2026-03-08T05:45:00Z'), scheduledFor: new Date('2026-03-08T05:45:00Z') },
    });
    const [l] = await leases.acquire([72], 'x', 30_000);
    const claimed = await claimWith(
      fires,
      { owner: 'x', shards: [l!], limit: 10, lookaheadMs: 0 },
      ({ job }, now) => planDueOccurrences(job, job.nextNominalAt!, now, { maxCatchUp: 10, herdJitterMs: 0 }),
    );
    expect(claimed.fires.map((f) => [f.event.fenceToken, f.event.nominalTime.toISOString()])).toEqual([
      [1, '2026-03-08T05:45:00.000Z'],
      [2, '2026-03-08T06:45:00.000Z'],
      [3, shared.toISOString()],
      [4, shared.toISOString()],
    ]);
    const rows = await db.pool.query(
      `SELECT fence_token::int, dst_shift_ms FROM fires WHERE job_id = 'dst-both' AND nominal_time = $1 ORDER BY fence_token`,
      [shared],
    );
    expect(rows.rows).toEqual([
      { fence_token: 3, dst_shift_ms: 3_600_000 },
      { fence_token: 4, dst_shift_ms: 0 },
    ]);
  });

  it('claims fairly across tenants: a tenant with a big backlog cannot starve a small one', async () => {
    const past = new Date(Date.now() - 60_000);
    for (let i = 0; i < 300; i++)
      await jobs.insertJob({ definition: definition(`fair-big-${i}`, 'big'), shard: 5, next: dueAt(past) });
    // The small tenant's jobs are due later than every one of the big tenant's.
    for (let i = 0; i < 5; i++)
      await jobs.insertJob({
        definition: definition(`fair-small-${i}`, 'small'),
        shard: 5,
        next: dueAt(new Date(Date.now() - 1_000)),
      });
    const [l] = await leases.acquire([5], 'fair', 30_000);
    const even = (tenants: readonly string[]) =>
      new Map(tenants.map((t) => [t, Math.ceil(20 / tenants.length)]));
    const first = await claimWith(
      fires,
      { owner: 'fair', shards: [l!], limit: 20, lookaheadMs: 0, tenantCaps: even },
      fireOnce,
    );
    const byTenant = (r: typeof first) =>
      r.fires.reduce<Record<string, number>>(
        (m, f) => ({ ...m, [f.event.tenantId]: (m[f.event.tenantId] ?? 0) + 1 }),
        {},
      );
    expect(byTenant(first)).toEqual({ big: 10, small: 5 });
    expect(first.saturated).toBe(true);
    // A rate-capped tenant gets only its cap; the rest stay due, nothing is dropped.
    const capped = await claimWith(
      fires,
      {
        owner: 'fair',
        shards: [l!],
        limit: 20,
        lookaheadMs: 0,
        tenantCaps: (ts) => new Map(ts.map((t) => [t, t === 'big' ? 3 : 20])),
      },
      fireOnce,
    );
    expect(byTenant(capped)).toEqual({ big: 3 });
    const { rows } = await db.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM jobs WHERE tenant_id = 'big' AND status = 'SCHEDULED'`,
    );
    expect(Number(rows[0]!.n)).toBe(300 - 13);
  });

  it('reports whether an overlap FORBID job still has its previous fire in flight', async () => {
    const def = { ...definition('forbid-1'), policies: { ...DEFAULT_POLICIES, overlap: 'FORBID' as const } };
    await jobs.insertJob({ definition: def, shard: 6, next: dueAt(new Date(Date.now() - 1_000)) });
    const [l] = await leases.acquire([6], 'ov', 30_000);
    const seen: boolean[] = [];
    const again: ClaimPlanner = (due) => {
      seen.push(due.previousFireInFlight);
      return {
        fires: [{ nominalTime: due.job.nextNominalAt!, scheduledFor: due.job.nextRunAt! }],
        skips: [],
        next: dueAt(new Date(due.job.nextNominalAt!.getTime() + 1)),
      };
    };
    await claimWith(fires, { owner: 'ov', shards: [l!], limit: 10, lookaheadMs: 0 }, again);
    // Fire 1 was claimed and no run has finished it: in flight.
    await claimWith(fires, { owner: 'ov', shards: [l!], limit: 10, lookaheadMs: 0 }, again);
    // The executor finishes fire 2: no longer in flight.
    const start = await runs.beginRun({ ...ledgerFire('forbid-1', 2) }, 'exec', 30_000);
    if (start.action !== 'execute') throw new Error('expected execute');
    await runs.completeRun({ jobId: 'forbid-1', fenceToken: 2 }, start.leaseToken, {
      status: 'SUCCEEDED',
      httpStatus: 200,
      error: null,
    });
    await claimWith(fires, { owner: 'ov', shards: [l!], limit: 10, lookaheadMs: 0 }, again);
    expect(seen).toEqual([false, true, false]);
  });

  it('parks a job whose stored definition cannot be planned instead of failing the whole claim', async () => {
    await jobs.insertJob({
      definition: definition('poison-1'),
      shard: 7,
      next: dueAt(new Date(Date.now() - 1_000)),
    });
    await jobs.insertJob({
      definition: definition('healthy-1'),
      shard: 7,
      next: dueAt(new Date(Date.now() - 1_000)),
    });
    await db.pool.query(`UPDATE jobs SET schedule = '{"kind": "sundial"}' WHERE job_id = 'poison-1'`);
    const [l] = await leases.acquire([7], 'p', 30_000);
    const r = await claimWith(fires, { owner: 'p', shards: [l!], limit: 10, lookaheadMs: 0 }, fireOnce);
    expect(r.fires.map((f) => f.event.jobId)).toEqual(['healthy-1']);
    expect(r.parked).toEqual(['poison-1']);
    const { rows } = await db.pool.query<{ status: string; reason: string }>(
      `SELECT j.status, s.reason FROM jobs j JOIN occurrence_skips s USING (job_id) WHERE j.job_id = 'poison-1'`,
    );
    expect(rows).toEqual([
      { status: 'PAUSED', reason: expect.stringMatching(/^INVALID_DEFINITION: .*sundial/) },
    ]);
  });

  it('purges the fire log past its retention by whole confirmed batches, never the outbox', async () => {
    for (const id of ['purge-old-1', 'purge-old-2', 'purge-pending', 'purge-new'])
      await jobs.insertJob({
        definition: definition(id),
        shard: 9,
        next: dueAt(new Date(Date.now() - 1_000)),
      });
    const [lease] = await leases.acquire([9], 'purger', 30_000);
    const claim = await claimWith(
      fires,
      { owner: 'purger', shards: [lease!], limit: 10, lookaheadMs: 0 },
      fireOnce,
    );
    expect(claim.fires).toHaveLength(4);
    // Three batches by hand: two old (one confirmed, one still in the outbox) and one recent.
    const batchOf = async (ids: string[], ageDays: number, enqueued: boolean) => {
      const { rows } = await db.pool.query<{ batch_id: string }>(
        `INSERT INTO fire_batches (shard, trigger, claimed_by, claimed_at, fires, enqueued_at)
         VALUES (9, 'SCHEDULE', 'purger', now() - make_interval(days => $1), $2, CASE WHEN $3 THEN now() END)
         RETURNING batch_id`,
        [ageDays, ids.length, enqueued],
      );
      await db.pool.query('UPDATE fires SET batch_id = $1 WHERE job_id = ANY($2::text[])', [
        rows[0]!.batch_id,
        ids,
      ]);
    };
    await batchOf(['purge-old-1', 'purge-old-2'], 40, true);
    await batchOf(['purge-pending'], 40, false);
    await batchOf(['purge-new'], 1, true);
    await db.pool.query(
      `INSERT INTO occurrence_skips (job_id, tenant_id, reason, first_nominal, last_nominal, occurrences, recorded_at)
       VALUES ('purge-old-1', 'acme', 'MISFIRE_SKIP', now(), now(), 1, now() - interval '40 days'),
              ('purge-new', 'acme', 'MISFIRE_SKIP', now(), now(), 1, now())`,
    );

    expect(await fires.purgeFireLog(30 * 86_400_000, 1_000)).toBe(2);
    const left = await db.pool.query<{ job_id: string }>(
      `SELECT job_id FROM fires WHERE job_id LIKE 'purge-%' ORDER BY job_id`,
    );
    expect(left.rows.map((r) => r.job_id)).toEqual(['purge-new', 'purge-pending']);
    const skips = await db.pool.query<{ job_id: string }>(
      `SELECT job_id FROM occurrence_skips WHERE job_id LIKE 'purge-%'`,
    );
    expect(skips.rows.map((r) => r.job_id)).toEqual(['purge-new']);
    expect(await fires.purgeFireLog(30 * 86_400_000, 1_000)).toBe(0);
  });

  describe('run ledger', () => {
    const fire: FireEvent = {
      jobId: 'ledger-1',
      tenantId: 'acme',
      fenceToken: 7,
      fireId: 'ledger-1:7',
      scheduledFor: new Date(),
      nominalTime: new Date(),
      attempt: 1,
      target: { type: 'kafka', topic: 't', key: null, headers: {} },
      payload: null,
    };

    it('runs a fire once: a second delivery is skipped while running and after success', async () => {
      const first = await runs.beginRun(fire, 'exec-a', 30_000);
      expect(first.action).toBe('execute');
      expect(await runs.beginRun(fire, 'exec-b', 30_000)).toMatchObject({
        action: 'skip',
        reason: 'LEASE_HELD',
      });
      if (first.action !== 'execute') throw new Error('unreachable');
      expect(
        await runs.completeRun(fire, first.leaseToken, { status: 'SUCCEEDED', httpStatus: 200, error: null }),
      ).not.toBeNull();
      expect(await runs.beginRun(fire, 'exec-b', 30_000)).toMatchObject({
        action: 'skip',
        reason: 'ALREADY_FINAL',
        status: 'SUCCEEDED',
      });
    });

    it('takes over an expired lease and rejects the old holder’s late writes', async () => {
      const f2 = { ...fire, fenceToken: 8, fireId: 'ledger-1:8' };
      const a = await runs.beginRun(f2, 'exec-a', 1_000);
      if (a.action !== 'execute') throw new Error('expected execute');
      await db.pool.query(
        `UPDATE job_runs SET lease_expires_at = now() - interval '1 second' WHERE job_id = $1 AND fence_token = 8`,
        [f2.jobId],
      );
      const b = await runs.beginRun(f2, 'exec-b', 30_000);
      expect(b).toMatchObject({ action: 'execute', takenOver: true });
      expect(await runs.heartbeat(f2, a.leaseToken, 30_000)).toBe(false);
      expect(
        await runs.completeRun(f2, a.leaseToken, { status: 'SUCCEEDED', httpStatus: 200, error: null }),
      ).toBeNull();
      if (b.action !== 'execute') throw new Error('expected execute');
      expect(
        await runs.completeRun(f2, b.leaseToken, {
          status: 'DEAD_LETTERED',
          httpStatus: 400,
          error: 'HTTP 400',
        }),
      ).not.toBeNull();
      expect((await runs.findRun(f2))?.status).toBe('DEAD_LETTERED');
    });

    it('lets a first attempt run unleased only while no run of it is recorded and its job exists, and records it once', async () => {
      await jobs.insertJob({ definition: definition('unleased-1'), shard: 3, next: dueAt(new Date()) });
      const at = (jobId: string, fenceToken: number) => ({ ...ledgerFire(jobId, fenceToken) });
      const leased = await runs.beginRun(at('unleased-1', 2), 'exec-a', 30_000);
      expect(leased.action).toBe('execute');
      expect(
        await runs.mayRunUnleasedMany([
          at('unleased-1', 1),
          // A run of it is recorded (RUNNING under a lease).
          at('unleased-1', 2),
          // No such job (deleted after the claim).
          at('unleased-gone', 1),
          at('unleased-1', 3),
        ]),
      ).toEqual([true, false, false, true]);

      expect(
        (
          await runs.recordUnleasedRuns([
            { fire: at('unleased-1', 1), owner: 'exec-b', durationMs: 40, httpStatus: null },
            // The leased run recorded first: it stands.
            { fire: at('unleased-1', 2), owner: 'exec-b', durationMs: 40, httpStatus: null },
            { fire: at('unleased-1', 3), owner: 'exec-b', durationMs: 0, httpStatus: null },
          ])
        ).map(Boolean),
      ).toEqual([true, false, true]);
      const one = await runs.findRunState(at('unleased-1', 1));
      expect(one).toMatchObject({
        status: 'SUCCEEDED',
        attempt: 1,
        leaseOwner: 'exec-b',
        leaseExpiresAt: null,
      });
      expect(one!.finishedAt!.getTime() - one!.startedAt!.getTime()).toBe(40);
      expect(await runs.findRunState(at('unleased-1', 2))).toMatchObject({
        status: 'RUNNING',
        leaseOwner: 'exec-a',
      });
      // Recorded: a second delivery takes the leased path, which finds it final.
      expect(await runs.mayRunUnleased(at('unleased-1', 1))).toBe(false);
      expect(await runs.beginRun(at('unleased-1', 1), 'exec-c', 30_000)).toMatchObject({
        action: 'skip',
        reason: 'ALREADY_FINAL',
      });
      expect(
        await runs.recordUnleasedRun({
          fire: at('unleased-1', 1),
          owner: 'exec-c',
          durationMs: 1,
          httpStatus: null,
        }),
      ).toBeNull();
    });

    it('renews many leases in one statement, and only those still held', async () => {
      const at = (fenceToken: number) => ({
        ...fire,
        jobId: 'ledger-hb',
        fenceToken,
        fireId: `ledger-hb:${fenceToken}`,
      });
      const starts = await runs.beginRuns([at(1), at(2), at(3)], 'exec-a', 1_000);
      const [held, finished, third] = starts.map((s) => {
        if (s.action !== 'execute') throw new Error('expected execute');
        return s.leaseToken;
      });
      await runs.completeRun(at(2), finished!, { status: 'SUCCEEDED', httpStatus: null, error: null });
      const expiry = async (fenceToken: number) =>
        (
          await db.pool.query<{ ms: number }>(
            `SELECT (extract(epoch FROM lease_expires_at - now()) * 1000)::float8 AS ms FROM job_runs WHERE job_id = 'ledger-hb' AND fence_token = $1`,
            [fenceToken],
          )
        ).rows[0]!.ms;

      expect(
        await runs.heartbeats([
          { key: at(1), leaseToken: held!, leaseMs: 60_000 },
          { key: at(2), leaseToken: finished!, leaseMs: 60_000 },
          // A lease token that is not the run's (its lease was taken over).
          { key: at(3), leaseToken: '00000000-0000-4000-8000-000000000000', leaseMs: 60_000 },
          // A run that was never begun, under another run's token.
          { key: at(4), leaseToken: third!, leaseMs: 60_000 },
        ]),
      ).toEqual([true, false, false, false]);
      // The renewed lease runs a minute from now; the one not renewed kept its one second.
      expect(await expiry(1)).toBeGreaterThan(50_000);
      expect(await expiry(3)).toBeLessThan(1_500);
    });
  });
});
