import { parseBulkActionRequest, type BulkCandidate } from '@tickwork/domain';
import { decide } from './bulk-service';
import type { Caller } from './caller';

const caller: Caller = { actor: 'ops', role: 'admin', tenantId: null, via: 'rest' };
const NOW = new Date('2026-12-03T12:00:00Z');
const c = (
  jobId: string,
  status: BulkCandidate['status'],
  extra: Partial<BulkCandidate> = {},
): BulkCandidate => ({
  jobId,
  tenantId: 't',
  status,
  hasNext: true,
  pausedUntil: null,
  ...extra,
});
const req = (body: Record<string, unknown>) =>
  parseBulkActionRequest({ label_selector: 'team=a', ...body }, NOW);

describe('a bulk action window (decide)', () => {
  it('pauses scheduled jobs, leaves paused ones, refuses completed ones', () => {
    const d = decide(req({ action: 'PAUSE' }), caller, 'b1', [
      c('a', 'SCHEDULED'),
      c('b', 'PAUSED'),
      c('c', 'COMPLETED'),
    ]);
    expect(d.outcomes.map((o) => [o.jobId, o.outcome])).toEqual([
      ['a', 'OK'],
      ['b', 'UNCHANGED'],
      ['c', 'FAILED_PRECONDITION'],
    ]);
    expect(d.pause).toEqual({ jobIds: ['a'], until: null, resume: null });
  });

  it('a pause until changes the until of a job already paused, and keeps who paused it and the choice', () => {
    const d = decide(
      req({ action: 'PAUSE', until: '2026-12-07T09:00:00Z', missed: 'FIRE_ONCE' }),
      caller,
      'b1',
      [c('a', 'PAUSED'), c('b', 'PAUSED', { pausedUntil: new Date('2026-12-07T09:00:00Z') })],
    );
    expect(d.outcomes.map((o) => o.outcome)).toEqual(['OK', 'UNCHANGED']);
    expect(d.pause?.resume).toMatchObject({
      actor: 'ops',
      role: 'admin',
      via: 'rest',
      bulk_action_id: 'b1',
      catch_up: { missed: 'FIRE_ONCE', window_ms: null, limit: 1000 },
    });
  });

  it('resumes paused jobs with the choice; plans the ones without a stored occurrence one by one', () => {
    const d = decide(req({ action: 'RESUME', missed: 'SKIP' }), caller, 'b1', [
      c('a', 'PAUSED'),
      c('b', 'PAUSED', { hasNext: false }),
      c('c', 'SCHEDULED'),
      c('d', 'COMPLETED'),
    ]);
    expect(d.resume).toEqual({ jobIds: ['a'], catchUp: { missed: 'SKIP', windowMs: null, limit: 1000 } });
    expect(d.planResume).toEqual(['b']);
    expect(d.outcomes.map((o) => [o.jobId, o.outcome])).toEqual([
      ['a', 'OK'],
      ['c', 'UNCHANGED'],
      ['d', 'FAILED_PRECONDITION'],
    ]);
  });

  it('triggers and deletes every matched job', () => {
    const all = [c('a', 'SCHEDULED'), c('b', 'PAUSED'), c('c', 'COMPLETED')];
    expect(decide(req({ action: 'TRIGGER' }), caller, 'b1', all).trigger).toEqual({
      jobIds: ['a', 'b', 'c'],
      claimedBy: 'manual:ops',
    });
    expect(decide(req({ action: 'DELETE' }), caller, 'b1', all).delete).toEqual({ jobIds: ['a', 'b', 'c'] });
  });
});
