import { planDueOccurrences } from './claim-planner';
import {
  editChangesTiming,
  MAX_EDIT_PREVIEW_OCCURRENCES,
  previewEdit,
  stateAfterEdit,
  type EditableJob,
} from './edit-preview';
import { DEFAULT_POLICIES } from './policies';
import type { Schedule } from './schedule';

const hourly: Schedule = {
  kind: 'cron',
  expression: '0 * * * *',
  timeZone: 'UTC',
  dstGap: 'AUTO',
  dstRepeat: 'AUTO',
};
const halfHourly: Schedule = { ...hourly, expression: '*/30 * * * *' };
const at = (iso: string) => new Date(iso);
const iso = (d: Date) => d.toISOString();

/** An hourly job whose next occurrence is `next` (already due when before `now`). */
function job(next: string, extra: Partial<EditableJob> = {}): EditableJob {
  return {
    jobId: 'j1',
    tenantId: 't',
    shard: 0,
    fenceToken: 5,
    schedule: hourly,
    policies: DEFAULT_POLICIES,
    target: { type: 'kafka', topic: 'x', key: null, headers: {} },
    payload: null,
    status: 'SCHEDULED',
    nextRunAt: at(next),
    nextNominalAt: at(next),
    nextDstShiftMs: 0,
    firesCount: 5,
    ...extra,
  };
}
const opts = { maxCatchUp: 10, herdJitterMs: 0, count: 4 };
const now = at('2026-06-01T10:20:00Z');

describe('stateAfterEdit', () => {
  it('keeps the cursor when the timing is unchanged, so due occurrences follow the misfire policy', () => {
    const j = job('2026-06-01T08:00:00Z');
    expect(
      stateAfterEdit(
        j,
        { jobId: 'j1', schedule: hourly, policies: { ...DEFAULT_POLICIES, misfire: 'SKIP' } },
        now,
        0,
      ),
    ).toBe('keep');
    expect(editChangesTiming(j, { schedule: hourly, policies: { ...DEFAULT_POLICIES, jitterMs: 5 } })).toBe(
      true,
    );
  });

  it('restarts a changed schedule at now, and completes a job left with no occurrence', () => {
    const j = job('2026-06-01T08:00:00Z');
    const s = stateAfterEdit(j, { jobId: 'j1', schedule: halfHourly, policies: DEFAULT_POLICIES }, now, 0);
    expect(s).not.toBe('keep');
    expect(s !== 'keep' && s.next && iso(s.next.nominalTime)).toBe('2026-06-01T10:30:00.000Z');
    const once: Schedule = { kind: 'once', at: at('2026-06-01T09:00:00Z') };
    const done = stateAfterEdit(j, { jobId: 'j1', schedule: once, policies: DEFAULT_POLICIES }, now, 0);
    expect(done).toEqual({ status: 'COMPLETED', next: null });
    const paused = stateAfterEdit(
      job('2026-06-01T11:00:00Z', { status: 'PAUSED' }),
      { jobId: 'j1', schedule: halfHourly, policies: DEFAULT_POLICIES },
      now,
      0,
    );
    expect(paused !== 'keep' && paused.status).toBe('PAUSED');
  });
});

describe('previewEdit', () => {
  it('lists the occurrences that appear and disappear, compared over the shorter list', () => {
    const p = previewEdit(
      job('2026-06-01T11:00:00Z'),
      { jobId: 'j1', schedule: { ...hourly, expression: '30 * * * *' }, policies: DEFAULT_POLICIES },
      now,
      opts,
    );
    expect(p.replanned).toBe(true);
    expect(p.before.occurrences.map((o) => iso(o.nominalTime))).toEqual([
      '2026-06-01T11:00:00.000Z',
      '2026-06-01T12:00:00.000Z',
      '2026-06-01T13:00:00.000Z',
      '2026-06-01T14:00:00.000Z',
    ]);
    expect(p.after.occurrences.map((o) => iso(o.nominalTime))).toEqual([
      '2026-06-01T10:30:00.000Z',
      '2026-06-01T11:30:00.000Z',
      '2026-06-01T12:30:00.000Z',
      '2026-06-01T13:30:00.000Z',
    ]);
    expect(iso(p.comparedUntil!)).toBe('2026-06-01T13:30:00.000Z');
    expect(p.appearing.map((o) => iso(o.nominalTime))).toEqual([
      '2026-06-01T10:30:00.000Z',
      '2026-06-01T11:30:00.000Z',
      '2026-06-01T12:30:00.000Z',
      '2026-06-01T13:30:00.000Z',
    ]);
    // 14:00 is beyond the after list's end: not reported as gone.
    expect(p.disappearing.map((o) => iso(o.nominalTime))).toEqual([
      '2026-06-01T11:00:00.000Z',
      '2026-06-01T12:00:00.000Z',
      '2026-06-01T13:00:00.000Z',
    ]);
  });

  it('changes nothing when only the payload-side fields change', () => {
    const p = previewEdit(
      job('2026-06-01T11:00:00Z'),
      { jobId: 'j1', schedule: hourly, policies: DEFAULT_POLICIES },
      now,
      opts,
    );
    expect(p.replanned).toBe(false);
    expect(p.appearing).toEqual([]);
    expect(p.disappearing).toEqual([]);
    expect(p.moved).toEqual([]);
    expect(p.after.occurrences).toEqual(p.before.occurrences);
  });

  it('reports a coalescing catch-up before, and none after a misfire change to SKIP (the planner decides)', () => {
    const overdue = job('2026-06-01T07:00:00Z');
    const p = previewEdit(
      overdue,
      { jobId: 'j1', schedule: hourly, policies: { ...DEFAULT_POLICIES, misfire: 'SKIP' } },
      now,
      opts,
    );
    // The scheduler's own plan for the job as it stands: the same numbers.
    const plan = planDueOccurrences(overdue as never, overdue.nextNominalAt!, now, {
      maxCatchUp: 10,
      herdJitterMs: 0,
    });
    expect(p.before.due.due).toBe(true);
    expect(p.before.due.catchUpFires).toBe(plan.fires.length);
    expect(p.before.due.catchUpFires).toBe(1);
    // 07:00..10:00 missed: one FIRE_ONCE fire stands for all four.
    expect(p.before.due.coalesced).toBe(3);
    expect(p.before.occurrences[0]).toMatchObject({ catchUp: true });
    expect(p.replanned).toBe(false);
    expect(p.after.due).toMatchObject({ due: true, catchUpFires: 0, coalesced: 0 });
    expect(p.after.due.skipped.map((s) => [s.reason, s.occurrences])).toEqual([['MISFIRE_SKIP', 4]]);
    expect(p.disappearing.filter((o) => o.catchUp)).toHaveLength(1);
  });

  it('drops the catch-up when the schedule changes (the cursor restarts at now)', () => {
    const p = previewEdit(
      job('2026-06-01T07:00:00Z', { policies: { ...DEFAULT_POLICIES, misfire: 'FIRE_ALL' } }),
      { jobId: 'j1', schedule: halfHourly, policies: { ...DEFAULT_POLICIES, misfire: 'FIRE_ALL' } },
      now,
      opts,
    );
    expect(p.before.due).toMatchObject({ due: true, catchUpFires: 4, coalesced: 0 });
    expect(p.after.due.due).toBe(false);
    expect(iso(p.after.occurrences[0]!.nominalTime)).toBe('2026-06-01T10:30:00.000Z');
  });

  it('shows a paused job’s catch-up as what happens on resume', () => {
    const p = previewEdit(
      job('2026-06-01T09:00:00Z', { status: 'PAUSED' }),
      { jobId: 'j1', schedule: hourly, policies: DEFAULT_POLICIES },
      now,
      opts,
    );
    expect(p.before.due).toMatchObject({ due: true, onResume: true, catchUpFires: 1, coalesced: 1 });
  });

  it('keeps a claimed-ahead fire in both lists and says whether the new schedule still has it', () => {
    // 10:30 claimed ahead under version 3; the job's cursor moved on to 11:30.
    const claimed = {
      fenceToken: 6,
      nominalTime: at('2026-06-01T10:30:00Z'),
      scheduledFor: at('2026-06-01T10:30:00Z'),
      dstShiftMs: 0,
      jobVersion: 3,
      enqueued: false,
    };
    const j = job('2026-06-01T11:30:00Z', { schedule: { ...hourly, expression: '30 * * * *' } });
    const gone = previewEdit(j, { jobId: 'j1', schedule: hourly, policies: DEFAULT_POLICIES }, now, {
      ...opts,
      claimed: [claimed],
    });
    expect(gone.claimedAhead).toEqual([{ ...claimed, inNewSchedule: false }]);
    expect(gone.before.occurrences[0]).toMatchObject({ claimed: true });
    expect(gone.after.occurrences[0]).toMatchObject({ claimed: true });
    expect(gone.appearing.map((o) => iso(o.nominalTime))).not.toContain('2026-06-01T10:30:00.000Z');
    expect(gone.disappearing.map((o) => iso(o.nominalTime))).not.toContain('2026-06-01T10:30:00.000Z');

    const kept = previewEdit(j, { jobId: 'j1', schedule: halfHourly, policies: DEFAULT_POLICIES }, now, {
      ...opts,
      claimed: [claimed],
    });
    expect(kept.claimedAhead[0]!.inNewSchedule).toBe(true);
    // The new schedule's 10:30 is that claimed fire, listed once.
    expect(
      kept.after.occurrences.filter((o) => iso(o.nominalTime) === '2026-06-01T10:30:00.000Z'),
    ).toHaveLength(1);
  });

  it('reports moved claim times when only the jitter changes', () => {
    const p = previewEdit(
      job('2026-06-01T11:00:00Z'),
      { jobId: 'j1', schedule: hourly, policies: { ...DEFAULT_POLICIES, jitterMs: 600_000 } },
      now,
      opts,
    );
    expect(p.appearing).toEqual([]);
    expect(p.disappearing).toEqual([]);
    expect(p.moved.length).toBeGreaterThan(0);
    for (const m of p.moved)
      expect(m.after.scheduledFor.getTime()).toBeGreaterThan(m.before.scheduledFor.getTime());
  });

  it('tells apart two occurrences at one instant (dst_gap SHIFT): SKIP removes only the shifted one', () => {
    // 2026-03-08 in New York: 02:45 does not exist; SHIFT fires it at 03:45 EDT, beside 03:45 itself.
    const shifted: Schedule = {
      kind: 'cron',
      expression: '45 0-3 * * *',
      timeZone: 'America/New_York',
      dstGap: 'SHIFT',
      dstRepeat: 'AUTO',
    };
    const p = previewEdit(
      job('2026-03-08T05:45:00Z', { schedule: shifted }),
      { jobId: 'j1', schedule: { ...shifted, dstGap: 'SKIP' }, policies: DEFAULT_POLICIES },
      at('2026-03-08T05:00:00Z'),
      opts,
    );
    expect(p.before.occurrences.map((o) => [iso(o.nominalTime), o.dstShiftMs ?? 0])).toEqual([
      ['2026-03-08T05:45:00.000Z', 0],
      ['2026-03-08T06:45:00.000Z', 0],
      ['2026-03-08T07:45:00.000Z', 3_600_000],
      ['2026-03-08T07:45:00.000Z', 0],
    ]);
    expect(p.disappearing.map((o) => [iso(o.nominalTime), o.dstShiftMs])).toEqual([
      ['2026-03-08T07:45:00.000Z', 3_600_000],
    ]);
    expect(p.appearing).toEqual([]);
  });

  it('bounds the count', () => {
    const p = previewEdit(
      job('2026-06-01T11:00:00Z'),
      { jobId: 'j1', schedule: halfHourly, policies: DEFAULT_POLICIES },
      now,
      {
        ...opts,
        count: 100_000,
      },
    );
    expect(p.after.occurrences).toHaveLength(MAX_EDIT_PREVIEW_OCCURRENCES);
  });
});
