/**
 * Label-wide control: pause, resume, trigger or delete every job matching a label selector in one
 * call, shared by REST, gRPC and the CLI. The selection is worked through in windows of a bounded
 * number of jobs, each one short transaction (BulkStore.window), so a selection of a million
 * jobs never holds a long transaction or many row locks, and the event loop only ever handles one
 * window's ids at a time. Every matched job gets an audit row (its action, the bulk action's id).
 */
import { randomUUID } from 'node:crypto';
import {
  parseBulkActionRequest,
  type BulkActionKind,
  type BulkActionRequest,
  type BulkCandidate,
  type BulkJobOutcome,
  type BulkScope,
  type BulkWindowChange,
  type JsonValue,
} from '@tickwork/domain';
import { tenantScope, type Caller } from './caller';
import { errorCodeOf } from './errors';
import type { JobService } from './job-service';
import type { BulkStore } from './ports';

/** How many ids of matched jobs, and of failures, an answer shows at most. */
export const BULK_SAMPLE_SIZE = 20;

/** Jobs per window by default: one transaction locks at most this many rows. */
export const DEFAULT_BULK_WINDOW = 1_000;

export interface BulkActionResult {
  readonly bulkActionId: string;
  readonly action: BulkActionKind;
  readonly dryRun: boolean;
  /** Jobs the selector matched (in the caller's tenant scope). */
  readonly matched: number;
  /** Jobs the action changed (paused, resumed, fired, deleted). */
  readonly changed: number;
  /** Jobs already in the asked-for state (a paused job paused again). */
  readonly unchanged: number;
  /** Jobs the action could not change (a COMPLETED job cannot be paused or resumed). */
  readonly failed: number;
  /** The first matched job ids (by id), at most BULK_SAMPLE_SIZE. */
  readonly sampleJobIds: readonly string[];
  /** The first failures, at most BULK_SAMPLE_SIZE. */
  readonly failures: readonly { jobId: string; code: string; message: string }[];
}

const AUDIT_ACTION: Record<BulkActionKind, string> = {
  PAUSE: 'PauseJob',
  RESUME: 'ResumeJob',
  TRIGGER: 'TriggerJob',
  DELETE: 'DeleteJob',
};

export class BulkActionService {
  private readonly window: number;
  private readonly now: () => Date;

  constructor(
    private readonly bulk: BulkStore,
    private readonly jobs: JobService,
    opts: { windowJobs?: number; now?: () => Date } = {},
  ) {
    this.window = opts.windowJobs ?? DEFAULT_BULK_WINDOW;
    this.now = opts.now ?? (() => new Date());
  }

  /**
   * Validates and runs a bulk action (wire JSON: action, label_selector, tenant_id, dry_run,
   * until, missed, catch_up_window_ms, catch_up_limit). A dry run only counts. A refused request
   * is audited as `BulkAction`.
   */
  async run(caller: Caller, raw: unknown): Promise<BulkActionResult> {
    return this.jobs.audited(caller, 'BulkAction', null, {}, async () => {
      const req = parseBulkActionRequest(raw, this.now());
      const tenantId = tenantScope(caller, req.tenantId, 'tenant_id') ?? null;
      const scope: BulkScope = { tenantId, selector: req.selector };
      const bulkActionId = randomUUID();
      if (req.dryRun) {
        const { matched, sample } = await this.bulk.count(scope, BULK_SAMPLE_SIZE);
        return {
          bulkActionId,
          action: req.action,
          dryRun: true,
          matched,
          changed: 0,
          unchanged: 0,
          failed: 0,
          sampleJobIds: sample,
          failures: [],
        };
      }
      return this.execute(caller, req, scope, bulkActionId);
    });
  }

  private async execute(
    caller: Caller,
    req: BulkActionRequest,
    scope: BulkScope,
    bulkActionId: string,
  ): Promise<BulkActionResult> {
    const audit = {
      actor: caller.actor,
      role: caller.role,
      via: caller.via,
      action: AUDIT_ACTION[req.action],
    };
    const details: Record<string, JsonValue> = {
      bulk_action_id: bulkActionId,
      label_selector: req.selectorText,
      ...(req.until ? { until: req.until.toISOString() } : {}),
      ...(req.catchUp ? { missed: req.catchUp.missed } : {}),
    };
    const counts = { matched: 0, changed: 0, unchanged: 0, failed: 0 };
    const sample: string[] = [];
    const failures: { jobId: string; code: string; message: string }[] = [];
    const tally = (o: { jobId: string; outcome: string; message?: string }) => {
      counts.matched++;
      if (sample.length < BULK_SAMPLE_SIZE) sample.push(o.jobId);
      if (o.outcome === 'OK') counts.changed++;
      else if (o.outcome === 'UNCHANGED') counts.unchanged++;
      else {
        counts.failed++;
        if (failures.length < BULK_SAMPLE_SIZE)
          failures.push({ jobId: o.jobId, code: o.outcome, message: o.message ?? '' });
      }
    };
    let after: string | null = null;
    for (;;) {
      const { end, change }: { end: string | null; change: ReturnType<typeof decide> } =
        await this.bulk.window(scope, after, this.window, audit, details, (c) =>
          decide(req, caller, bulkActionId, c),
        );
      for (const o of change.outcomes) tally({ jobId: o.jobId, outcome: o.outcome, message: messageOf(o) });
      // A paused job with no stored next occurrence is resumed as ResumeJob does (its first
      // occurrence from now is planned): rare, so one call each, each with its own audit row.
      for (const jobId of change.planResume) {
        try {
          await this.jobs.resumeJob(caller, jobId);
          tally({ jobId, outcome: 'OK' });
        } catch (e) {
          tally({ jobId, outcome: errorCodeOf(e), message: (e as Error).message });
        }
      }
      if (end === null) break;
      after = end;
    }
    return {
      bulkActionId,
      action: req.action,
      dryRun: false,
      ...counts,
      sampleJobIds: [...sample].sort(),
      failures,
    };
  }
}

function messageOf(o: BulkJobOutcome): string | undefined {
  const m = o.details?.message;
  return typeof m === 'string' ? m : undefined;
}

/** A window's change, decided from its locked candidates (pure). */
export function decide(
  req: BulkActionRequest,
  caller: Caller,
  bulkActionId: string,
  candidates: readonly BulkCandidate[],
): BulkWindowChange & { planResume: string[] } {
  const outcomes: BulkJobOutcome[] = [];
  const ids: string[] = [];
  const planResume: string[] = [];
  const ok = (c: BulkCandidate) => {
    ids.push(c.jobId);
    outcomes.push({ jobId: c.jobId, tenantId: c.tenantId, outcome: 'OK' });
  };
  const unchanged = (c: BulkCandidate, why: string) =>
    outcomes.push({ jobId: c.jobId, tenantId: c.tenantId, outcome: 'UNCHANGED', details: { message: why } });
  const completed = (c: BulkCandidate, what: string) =>
    outcomes.push({
      jobId: c.jobId,
      tenantId: c.tenantId,
      outcome: 'FAILED_PRECONDITION',
      details: { message: `job ${c.jobId} is COMPLETED: it has no occurrence left to ${what}` },
    });
  switch (req.action) {
    case 'PAUSE': {
      const until = req.until ?? null;
      for (const c of candidates) {
        if (c.status === 'COMPLETED') completed(c, 'pause');
        else if (c.status === 'SCHEDULED') ok(c);
        else if ((c.pausedUntil?.getTime() ?? null) !== (until?.getTime() ?? null)) ok(c);
        else unchanged(c, 'already paused');
      }
      const resume: Record<string, JsonValue> | null = until
        ? {
            actor: caller.actor,
            role: caller.role,
            via: caller.via,
            bulk_action_id: bulkActionId,
            catch_up: req.catchUp
              ? { missed: req.catchUp.missed, window_ms: req.catchUp.windowMs, limit: req.catchUp.limit }
              : null,
          }
        : null;
      return { outcomes, pause: { jobIds: ids, until, resume }, planResume };
    }
    case 'RESUME':
      for (const c of candidates) {
        if (c.status === 'COMPLETED') completed(c, 'resume; update its schedule instead');
        else if (c.status === 'SCHEDULED') unchanged(c, 'not paused');
        else if (c.hasNext) ok(c);
        else planResume.push(c.jobId);
      }
      return { outcomes, resume: { jobIds: ids, catchUp: req.catchUp ?? null }, planResume };
    case 'TRIGGER':
      for (const c of candidates) ok(c);
      return { outcomes, trigger: { jobIds: ids, claimedBy: `manual:${caller.actor}` }, planResume };
    case 'DELETE':
      for (const c of candidates) ok(c);
      return { outcomes, delete: { jobIds: ids }, planResume };
  }
}
