/**
 * Business calendars against real PostgreSQL: the claim resolves a job's calendars (its tenant's own
 * before a shared one) and records CALENDAR_SHIFT on the moved fire and CALENDAR_SKIP in the skip
 * ledger, each with the calendar's name and version; two occurrences moved onto one instant are two
 * fires; a calendar update bumps its version, keeps the old one, audits, and re-plans the jobs that
 * use it; a calendar in use is not deleted; a tenant cannot name another tenant's calendar.
 */
import {
  DEFAULT_POLICIES,
  MAX_JITTER_MS,
  planClaimedJob,
  type ClaimPlanner,
  type JobDefinition,
  type JobPolicies,
} from '@tickwork/domain';
import { CalendarService, JobService, type Caller } from '@tickwork/jobs';
import {
  CalendarRepository,
  FireStore,
  HistoryRepository,
  JobRepository,
  ShardLeaseRepository,
} from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';
import { claimWith } from '../support/fire-loop';

const SHARD = 1;
const DAY = 86_400_000;
const planner: ClaimPlanner = ({ job, previousFireInFlight }, now) =>
  planClaimedJob(
    job,
    job.nextNominalAt ?? now,
    now,
    { maxCatchUp: 10, herdJitterMs: 0 },
    previousFireInFlight,
  );
const admin: Caller = { actor: 'root', role: 'admin', tenantId: null, via: 'rest' };
const acme: Caller = { actor: 'acme-user', role: 'tenant', tenantId: 'acme', via: 'rest' };
const globex: Caller = { actor: 'globex-user', role: 'tenant', tenantId: 'globex', via: 'rest' };
const dateOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe('business calendars (store and claim)', () => {
  let db: TestDatabase;
  let fires: FireStore;
  let jobs: JobRepository;
  let service: JobService;
  let calendars: CalendarService;

  beforeAll(async () => {
    db = await testDatabase('calendars');
    fires = new FireStore(db.pool);
    jobs = new JobRepository(db.pool);
    const repo = new CalendarRepository(db.pool);
    service = new JobService(jobs, new HistoryRepository(db.pool), {
      shardCount: 4,
      herdJitterMs: 0,
      limits: { minIntervalMs: 1_000, maxPayloadBytes: 65_536, maxJitterMs: MAX_JITTER_MS },
      calendars: repo,
    });
    calendars = new CalendarService(repo, service, { herdJitterMs: 0 });
  }, 60_000);
  afterAll(async () => db?.close());

  /** A daily interval job of acme anchored at `anchor`, through `names` under `rule`, due at the anchor. */
  const dailyJob = async (
    jobId: string,
    anchor: number,
    names: string[],
    rule: JobPolicies['calendarRule'],
  ) => {
    const definition: JobDefinition = {
      jobId,
      tenantId: 'acme',
      schedule: { kind: 'interval', everyMs: DAY, anchor: new Date(anchor) },
      target: { type: 'kafka', topic: 'sink', key: null, headers: {} },
      payload: null,
      // FIRE_ALL: an occurrence a second late is still fired (the claim runs on the database clock).
      policies: { ...DEFAULT_POLICIES, misfire: 'FIRE_ALL', calendars: names, calendarRule: rule },
      labels: {},
    };
    await jobs.insertJob({
      definition,
      shard: SHARD,
      next: { nominalTime: new Date(anchor), scheduledFor: new Date(anchor) },
    });
  };

  it('the claim records CALENDAR_SHIFT (two fires at one instant) and CALENDAR_SKIP with name@version', async () => {
    const anchor = Date.now() - 500;
    // acme's own "ops" closes the anchor's next day; a shared "ops" (shadowed for acme) closes nothing.
    await calendars.create(admin, { name: 'ops', closed_weekdays: [] }, { shared: true });
    await calendars.create(acme, { name: 'ops', closed_weekdays: [], closed_dates: [dateOf(anchor + DAY)] });
    // Version 2 of "shut", which closes the anchor's own day.
    await calendars.create(acme, { name: 'shut', closed_weekdays: [] });
    await calendars.update(acme, 'shut', { closed_weekdays: [], closed_dates: [dateOf(anchor)] });

    await dailyJob('shifted', anchor, ['ops'], 'PREVIOUS_BUSINESS_DAY');
    await dailyJob('skipped', anchor, ['shut'], 'SKIP');

    const [lease] = await new ShardLeaseRepository(db.pool).acquire([SHARD], 'lane', 30_000);
    const claim = await claimWith(
      fires,
      { owner: 'lane', shards: [lease!], limit: 100, lookaheadMs: 0 },
      planner,
    );
    expect(claim.parked).toEqual([]);

    const fired = await db.pool.query<{
      job_id: string;
      nominal_time: Date;
      calendar_shift_ms: string;
      calendar: string | null;
    }>(
      `SELECT job_id, nominal_time, calendar_shift_ms, calendar FROM fires ORDER BY job_id, calendar_shift_ms DESC`,
    );
    // Tomorrow's occurrence, moved back onto today's instant, is a fire of its own beside today's.
    expect(
      fired.rows.map((r) => [r.job_id, r.nominal_time.getTime(), Number(r.calendar_shift_ms), r.calendar]),
    ).toEqual([
      ['shifted', anchor, 0, null],
      ['shifted', anchor, -DAY, 'ops@1'],
    ]);
    const skips = await db.pool.query<{
      job_id: string;
      reason: string;
      first_nominal: Date;
      calendar: string;
    }>(`SELECT job_id, reason, first_nominal, calendar FROM occurrence_skips`);
    expect(skips.rows.map((r) => [r.job_id, r.reason, r.first_nominal.getTime(), r.calendar])).toEqual([
      ['skipped', 'CALENDAR_SKIP', anchor, 'shut@2'],
    ]);
    const next = await db.pool.query<{
      job_id: string;
      next_nominal_at: Date;
      next_calendar_shift_ms: string;
    }>(
      `SELECT job_id, next_nominal_at, next_calendar_shift_ms FROM jobs WHERE job_id IN ('shifted', 'skipped') ORDER BY job_id`,
    );
    expect(
      next.rows.map((r) => [r.job_id, r.next_nominal_at.getTime(), Number(r.next_calendar_shift_ms)]),
    ).toEqual([
      ['shifted', anchor + 2 * DAY, 0],
      ['skipped', anchor + DAY, 0],
    ]);

    // The ledger reads them back.
    const ledger = await new HistoryRepository(db.pool).listOccurrences('shifted', 10);
    expect(ledger.filter((o) => o.kind === 'FIRE').map((o) => o.kind === 'FIRE' && o.calendarShift)).toEqual([
      { calendar: 'ops@1', shiftMs: -DAY },
      null,
    ]);
  });

  it('a calendar update bumps the version, keeps the old one, audits, and re-plans the jobs using it', async () => {
    const anchor = Date.now() + 3_600_000;
    await calendars.create(acme, { name: 'ops2', closed_weekdays: [] });
    await service.createJob(acme, {
      job_id: 'replanned',
      schedule: { kind: 'interval', every_ms: DAY, anchor: new Date(anchor).toISOString() },
      target: { type: 'kafka', topic: 'sink' },
      policies: { calendars: ['ops2'], calendar_rule: 'NEXT_BUSINESS_DAY' },
    });
    const before = (await jobs.findJob('replanned'))!;
    expect(before.nextNominalAt?.getTime()).toBe(anchor);

    const { calendar, replanned } = await calendars.update(acme, 'ops2', {
      closed_weekdays: [],
      closed_dates: [dateOf(anchor)],
    });
    expect(calendar.version).toBe(2);
    expect(replanned).toBe(1);
    const after = await db.pool.query<{
      next_nominal_at: Date;
      next_run_at: Date;
      next_calendar_shift_ms: string;
    }>(`SELECT next_nominal_at, next_run_at, next_calendar_shift_ms FROM jobs WHERE job_id = 'replanned'`);
    // The first occurrence moved a day on, at its wall time (UTC for an interval job).
    expect(after.rows[0]!.next_nominal_at.getTime()).toBe(anchor + DAY);
    expect(Number(after.rows[0]!.next_calendar_shift_ms)).toBe(DAY);

    const versions = await db.pool.query<{ version: string }>(
      `SELECT version FROM business_calendar_versions WHERE tenant_id = 'acme' AND name = 'ops2' ORDER BY version`,
    );
    expect(versions.rows.map((r) => Number(r.version))).toEqual([1, 2]);
    const audit = await db.pool.query<{ action: string; outcome: string }>(
      `SELECT action, outcome FROM audit_events WHERE details->>'calendar' = 'ops2' ORDER BY id`,
    );
    expect(audit.rows).toEqual([
      { action: 'CreateCalendar', outcome: 'OK' },
      { action: 'UpdateCalendar', outcome: 'OK' },
    ]);

    // In use: not deleted (and the refusal is audited); an etag of an old version is refused.
    await expect(calendars.delete(acme, 'ops2')).rejects.toThrow(/used by 1 job\(s\) \(replanned\)/);
    await expect(calendars.update(acme, 'ops2', { closed_weekdays: [] }, { etag: '"v1"' })).rejects.toThrow(
      /at version 2, not 1/,
    );
    expect((await calendars.get(acme, 'ops2')).version).toBe(2);
  });

  it("a tenant cannot name another tenant's calendar, nor write a shared one", async () => {
    await expect(
      service.createJob(globex, {
        job_id: 'nosy',
        schedule: { kind: 'interval', every_ms: DAY },
        target: { type: 'kafka', topic: 'sink' },
        policies: { calendars: ['ops2'] },
      }),
    ).rejects.toMatchObject({ violations: [{ field: 'policies.calendars[0]' }] });
    await expect(calendars.get(globex, 'ops2')).rejects.toThrow(/calendar ops2 not found/);
    await expect(calendars.create(globex, { name: 'mine' }, { shared: true })).rejects.toThrow(
      /may not write shared calendars/,
    );
    // The shared "ops" is visible to globex (acme's own "ops" is not).
    expect((await calendars.get(globex, 'ops')).tenantId).toBeNull();

    // globex's job names the shared "ops"; globex's own "ops", created later, comes before it and re-plans the job.
    const anchor = Date.now() + 3_600_000;
    await service.createJob(globex, {
      job_id: 'globex-job',
      schedule: { kind: 'interval', every_ms: DAY, anchor: new Date(anchor).toISOString() },
      target: { type: 'kafka', topic: 'sink' },
      policies: { calendars: ['ops'], calendar_rule: 'NEXT_BUSINESS_DAY' },
    });
    expect((await jobs.findJob('globex-job'))!.nextNominalAt?.getTime()).toBe(anchor);
    await calendars.create(globex, { name: 'ops', closed_weekdays: [], closed_dates: [dateOf(anchor)] });
    const next = await db.pool.query<{ next_nominal_at: Date }>(
      `SELECT next_nominal_at FROM jobs WHERE job_id = 'globex-job'`,
    );
    expect(next.rows[0]!.next_nominal_at.getTime()).toBe(anchor + DAY);
  });
});
