import type { FireEvent } from './fire';
import { fireEventOfRow, fireEventSnapshot, type FireColumns } from './fire-snapshot';
import { targetFromWire } from './job-wire';

const row: FireColumns = {
  job_id: 'job-1',
  tenant_id: 'acme',
  fence_token: '7',
  scheduled_for: new Date('2026-12-05T10:00:00.250Z'),
  nominal_time: new Date('2026-12-05T10:00:00.000Z'),
  spread_offset_ms: '250',
};
const now = { target: { type: 'webhook', url: 'https://example.test/now' }, payload: { v: 2 } };
const then = { target: { type: 'webhook', url: 'https://example.test/then' }, payload: { v: 1 } };

describe('fireEventOfRow', () => {
  it("rebuilds a claimed fire from its columns and its job's target and payload", () => {
    expect(fireEventOfRow(row, null, now)).toEqual<FireEvent>({
      target: targetFromWire(now.target),
      jobId: 'job-1',
      tenantId: 'acme',
      fenceToken: 7,
      fireId: 'job-1:7',
      scheduledFor: new Date('2026-12-05T10:00:00.250Z'),
      nominalTime: new Date('2026-12-05T10:00:00.000Z'),
      spreadOffsetMs: 250,
      attempt: 1,
      payload: { v: 2 },
    });
  });

  it('prefers the target and payload frozen when the job changed', () => {
    const e = fireEventOfRow(row, then, now);
    expect(e.target).toMatchObject({ url: 'https://example.test/then' });
    expect(e.payload).toEqual({ v: 1 });
  });

  it('reads a whole stored snapshot as it is (manual, replayed, backfilled fires)', () => {
    const snapshot = fireEventSnapshot({
      ...fireEventOfRow(row, then, null),
      attempt: 3,
      fenceToken: 9,
      fireId: 'job-1:9',
    });
    const e = fireEventOfRow(row, snapshot, now);
    expect([e.fenceToken, e.fireId, e.attempt, e.payload]).toEqual([9, 'job-1:9', 3, { v: 1 }]);
  });

  it('leaves out a zero spread offset, as the claim does', () => {
    expect(fireEventOfRow({ ...row, spread_offset_ms: 0 }, null, now)).not.toHaveProperty('spreadOffsetMs');
  });

  it('refuses a fire with neither a stored event nor a job, naming the fire', () => {
    expect(() => fireEventOfRow(row, null, null)).toThrow(
      'fire job-1:7 has no stored event and its job is gone',
    );
  });
});
