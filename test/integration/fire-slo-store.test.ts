/**
 * The fire SLO sweep against real PostgreSQL: which fires it judges (scheduled ones of settled
 * batches of a shard it holds), what it records (LATE with lateness, MISSED, nothing when on
 * time), the watch list, paging by fires, and that a verdict is recorded once however the sweep
 * is repeated: after a reset of the shard's mark, or by two sweeps of one shard at once.
 */
import { DEFAULT_POLICIES, policiesToWire, scheduleToWire, type JobPolicies } from '@tickwork/domain';
import { judgeCandidate } from '@tickwork/scheduling';
import type { SloSweepRequest } from '@tickwork/domain';
import { SloRepository } from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';

const DEFAULTS = { toleranceMs: 60_000, missedAfterMs: 86_400_000 };
const OWNER = 'sched-a';
const SHARD = 2;
const HOUR = 3_600_000;

describe('fire SLO sweep (store)', () => {
  let db: TestDatabase;
  let repo: SloRepository;
  let epoch: number;
  let token = 0;

  const request = (over: Partial<SloSweepRequest> = {}): SloSweepRequest => ({
    shard: SHARD,
    epoch,
    owner: OWNER,
    settleMs: 1_000,
    limit: 500,
    maxFires: 5_000,
    ...over,
  });
  const sweep = (over: Partial<SloSweepRequest> = {}) =>
    repo.sweepShard(request(over), (c, now) => judgeCandidate(c, now, DEFAULTS));
  const dbNow = async () =>
    (await db.pool.query<{ now: Date }>('SELECT now() AS now')).rows[0]!.now.getTime();

  /** An hourly job (tolerance 10 s) in SHARD. */
  const job = async (jobId: string, policies: JobPolicies = { ...DEFAULT_POLICIES, toleranceMs: 10_000 }) => {
    const schedule = { kind: 'interval' as const, everyMs: HOUR, anchor: new Date('2026-01-01T00:00:00Z') };
    await db.pool.query(
      `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, next_run_at, next_nominal_at, target, payload, policies)
       VALUES ($1, 'acme', $2, 'interval', $3, 'SCHEDULED', now() + interval '1 hour', now() + interval '1 hour', '{"type":"kafka","topic":"t"}', 'null', $4)`,
      [jobId, SHARD, JSON.stringify(scheduleToWire(schedule)), JSON.stringify(policiesToWire(policies))],
    );
  };
  /** A claimed batch (claimed `claimedAgoMs` ago) holding one fire per nominal time. */
  const batch = async (
    jobId: string,
    nominals: readonly number[],
    opts: { claimedAgoMs?: number; trigger?: 'SCHEDULE' | 'MANUAL'; shard?: number } = {},
  ): Promise<number[]> => {
    const trigger = opts.trigger ?? 'SCHEDULE';
    const { rows } = await db.pool.query<{ batch_id: string }>(
      `INSERT INTO fire_batches (shard, trigger, claimed_by, claimed_at, fires, enqueued_at)
       VALUES ($1, $2, $3, now() - make_interval(secs => $4::double precision / 1000), $5, now())
       RETURNING batch_id`,
      [opts.shard ?? SHARD, trigger, OWNER, opts.claimedAgoMs ?? 5_000, nominals.length],
    );
    const tokens: number[] = [];
    for (const n of nominals) {
      const fence = ++token;
      tokens.push(fence);
      await db.pool.query(
        `INSERT INTO fires (job_id, fence_token, tenant_id, shard, nominal_time, scheduled_for, trigger, claimed_by, event, batch_id)
         VALUES ($1, $2, 'acme', $3, to_timestamp($4 / 1000.0), to_timestamp($4 / 1000.0), $5, $6, '{}', $7)`,
        [jobId, fence, opts.shard ?? SHARD, n, trigger, OWNER, rows[0]!.batch_id],
      );
    }
    return tokens;
  };
  /** The executor's ledger row of a fire, first started at `startedMs`. */
  const started = (jobId: string, fence: number, nominalMs: number, startedMs: number) =>
    db.pool.query(
      `INSERT INTO job_runs (job_id, fence_token, tenant_id, fire_id, nominal_time, scheduled_for, status, started_at, finished_at, created_at)
       VALUES ($1, $2, 'acme', $5, to_timestamp($3 / 1000.0), to_timestamp($3 / 1000.0), 'SUCCEEDED',
               to_timestamp($4 / 1000.0), to_timestamp($4 / 1000.0), to_timestamp($4 / 1000.0))`,
      [jobId, fence, nominalMs, startedMs, `${jobId}:${fence}`],
    );
  const verdicts = async (jobId: string) =>
    (
      await db.pool.query<{
        fence_token: string;
        reason: string;
        lateness_ms: string | null;
        recorded_at: Date;
      }>(
        'SELECT fence_token, reason, lateness_ms, recorded_at FROM occurrence_slo WHERE job_id = $1 ORDER BY fence_token',
        [jobId],
      )
    ).rows.map((r) => ({
      fence: Number(r.fence_token),
      reason: r.reason,
      latenessMs: r.lateness_ms === null ? null : Number(r.lateness_ms),
      at: r.recorded_at.toISOString(),
    }));
  const watched = async () =>
    (
      await db.pool.query<{ job_id: string; fence_token: string }>(
        'SELECT job_id, fence_token FROM slo_watch',
      )
    ).rows.map((r) => `${r.job_id}:${r.fence_token}`);

  beforeAll(async () => {
    db = await testDatabase('fireslostore');
    repo = new SloRepository(db.pool);
    const { rows } = await db.pool.query<{ epoch: string }>(
      `INSERT INTO shard_leases (shard, owner, epoch, expires_at) VALUES ($1, $2, 3, now() + interval '1 hour')
       RETURNING epoch`,
      [SHARD, OWNER],
    );
    epoch = Number(rows[0]!.epoch);
  });
  afterAll(async () => db.close());

  it('records LATE with its lateness, MISSED past the deadline, nothing on time; watches the undecided', async () => {
    const now = await dbNow();
    await job('hourly');
    // Nominal times on the job's hourly grid: two hours ago (deadline passed), and this hour.
    const thisHour = Math.floor(now / HOUR) * HOUR;
    // One nominal time per fire, on the job's hourly grid, all of them more than an hour ago
    // (their deadline, the next occurrence, has passed) but the undecided one (this hour).
    const n = (i: number) => thisHour - (i + 2) * HOUR;
    const [onTime, late, missed, startedAfterDeadline] = await batch('hourly', [n(0), n(1), n(2), n(3)]);
    const undecided = (await batch('hourly', [thisHour]))[0]!;
    await started('hourly', onTime!, n(0), n(0) + 9_000);
    await started('hourly', late!, n(1), n(1) + 25_000);
    await started('hourly', startedAfterDeadline!, n(3), n(3) + HOUR + 1);
    // Not judged: a manual fire, another shard's fire, and a batch claimed just now (not settled).
    await batch('hourly', [n(4)], { trigger: 'MANUAL' });
    await batch('hourly', [n(4)], { shard: SHARD + 1 });
    const fresh = (await batch('hourly', [n(5)], { claimedAgoMs: 0 }))[0]!;

    const r = await sweep();
    expect(r).toMatchObject({ held: true, pending: 1, more: false });
    expect(r.recorded.map((v) => [v.jobId, v.reason, v.latenessMs]).sort()).toEqual(
      [
        ['hourly', 'LATE', 25_000],
        ['hourly', 'MISSED', null],
        ['hourly', 'MISSED', HOUR + 1],
      ].sort(),
    );
    expect(r.onTime.length).toBe(1);
    expect((await verdicts('hourly')).map((v) => [v.fence, v.reason, v.latenessMs])).toEqual([
      [late, 'LATE', 25_000],
      [missed, 'MISSED', null],
      [startedAfterDeadline, 'MISSED', HOUR + 1],
    ]);
    expect(await watched()).toEqual([`hourly:${undecided}`]);

    // The undecided fire starts 30 s late: the next sweep records it LATE and drops it from the
    // watch list; the fresh batch, settled now, is judged too (never started, deadline passed).
    await started('hourly', undecided, thisHour, thisHour + 30_000);
    await db.pool.query(`UPDATE fire_batches SET claimed_at = now() - interval '1 minute'`);
    const r2 = await sweep();
    expect(r2.recorded.map((v) => [v.reason, v.latenessMs]).sort()).toEqual([
      ['LATE', 30_000],
      ['MISSED', null],
    ]);
    expect(await watched()).toEqual([]);
    expect((await verdicts('hourly')).find((v) => v.fence === fresh)).toMatchObject({ reason: 'MISSED' });
  });

  it('records nothing twice: a reset mark, or two sweeps of one shard at once', async () => {
    const before = await verdicts('hourly');
    expect(before.length).toBeGreaterThan(0);
    await db.pool.query('UPDATE slo_sweep_marks SET next_batch_id = 0');
    const again = await sweep();
    expect(again.recorded).toEqual([]);
    expect(await verdicts('hourly')).toEqual(before);

    // Fresh fires, then two sweeps together: the shard's mark serializes them, each verdict once.
    await job('concurrent');
    const old = Math.floor((await dbNow()) / HOUR) * HOUR - 3 * HOUR;
    await batch('concurrent', [old, old - HOUR, old - 2 * HOUR]);
    const [a, b] = await Promise.all([sweep(), sweep()]);
    expect(a.recorded.length + b.recorded.length).toBe(3);
    expect((await verdicts('concurrent')).map((v) => v.reason)).toEqual(['MISSED', 'MISSED', 'MISSED']);
  });

  it('does nothing under a stale epoch or another owner', async () => {
    await job('fenced');
    const old = Math.floor((await dbNow()) / HOUR) * HOUR - 3 * HOUR;
    await batch('fenced', [old]);
    expect(await sweep({ epoch: epoch - 1 })).toMatchObject({ held: false, recorded: [] });
    expect(await sweep({ owner: 'sched-b' })).toMatchObject({ held: false, recorded: [] });
    expect(await verdicts('fenced')).toEqual([]);
    expect((await sweep()).recorded.map((v) => v.jobId)).toEqual(['fenced']);
  });

  it('pages whole batches by fires and says when more are waiting', async () => {
    await job('paged');
    const old = Math.floor((await dbNow()) / HOUR) * HOUR - 3 * HOUR;
    for (let i = 0; i < 3; i++) await batch('paged', [old - 2 * i * HOUR, old - (2 * i + 1) * HOUR]);
    const pages: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await sweep({ maxFires: 3 });
      pages.push(r.recorded.length);
      if (!r.more) break;
    }
    // 2 fires a batch, at most 3 fires a page: one batch a page (a page always takes one); the
    // last page says nothing more is waiting.
    expect(pages).toEqual([2, 2, 2]);
    expect((await verdicts('paged')).length).toBe(6);
  });

  it('lists opted-in scheduled jobs of the held shards with their last success', async () => {
    await job('opted', { ...DEFAULT_POLICIES, sloMetrics: true });
    await job('not-opted');
    const fence = (await batch('opted', [Date.now() - HOUR]))[0]!;
    await started('opted', fence, Date.now() - HOUR, Date.parse('2026-12-01T10:00:00Z'));
    const listed = await repo.metricJobs([SHARD], 100);
    expect(listed.map((j) => [j.jobId, j.lastSuccessAt?.toISOString()])).toEqual([
      ['opted', '2026-12-01T10:00:00.000Z'],
    ]);
    expect(await repo.metricJobs([SHARD + 1], 100)).toEqual([]);
    await db.pool.query(`UPDATE jobs SET status = 'PAUSED' WHERE job_id = 'opted'`);
    expect(await repo.metricJobs([SHARD], 100)).toEqual([]);
  });
});
