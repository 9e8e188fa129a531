/**
 * Telemetry of the claim as decorators over the ClaimStore port (the store only runs SQL):
 * - TracedClaimStore: a `claim jobs` span per claim that claimed or skipped something and a
 *   `tickwork.fire` span per claimed occurrence (claim-trace.ts), whose contexts go into the
 *   fires' outbox rows; the spans end after the commit, or fail with a claim that rolled back;
 * - MeteredClaimStore: each claim's skipped occurrences and parked jobs into the scheduler's metrics.
 */
import type {
  ClaimBatch,
  ClaimBuilder,
  ClaimRequest,
  ClaimResult,
  DueJob,
  DueProbe,
  DueProbeRequest,
  JobTraceOrigin,
} from '@tickwork/domain';
import type { SchedulerMetrics } from '@tickwork/telemetry';
import { ClaimTrace } from './claim-trace';
import type { ClaimStore } from './ports';

/** The claim with its spans. */
export class TracedClaimStore implements ClaimStore {
  constructor(private readonly inner: ClaimStore) {}

  probeDue(req: DueProbeRequest): Promise<DueProbe> {
    return this.inner.probeDue(req);
  }

  async claimDueJobs(req: ClaimRequest, build: ClaimBuilder): Promise<ClaimResult> {
    const startedAt = Date.now();
    let attempt: ClaimTrace | undefined;
    const traced: ClaimBuilder = (due, now) => {
      // Built again: the store retries the claim job by job, the attempt before rolled back.
      attempt?.fail(new Error('claim rolled back: a job could not be stored; claimed again job by job'));
      attempt = new ClaimTrace(req.shards.length, startedAt);
      return withTraces(build(due, now), due, attempt);
    };
    try {
      const result = await this.inner.claimDueJobs(req, traced);
      attempt?.end();
      return result;
    } catch (e) {
      attempt?.fail(e);
      throw e;
    }
  }
}

/**
 * Begins the spans of a claim that claimed or skipped something (most ticks find nothing) and
 * gives each job's fires the trace contexts to store.
 */
function withTraces(batch: ClaimBatch, due: readonly DueJob[], trace: ClaimTrace): ClaimBatch {
  let fireCount = 0;
  let skipped = 0;
  for (const j of batch.jobs) {
    fireCount += j.fires.length;
    skipped += j.skipped;
  }
  if (fireCount === 0 && skipped === 0) return batch;
  const origins = new Map<string, JobTraceOrigin>();
  for (const d of due) if (d.traceOrigin) origins.set(d.job.jobId, d.traceOrigin);
  const traces = trace.begin(
    batch.jobs.flatMap((j) => j.fires.map((f) => ({ ...f, origin: origins.get(f.event.jobId) }))),
    skipped,
  );
  let at = 0;
  const jobs = batch.jobs.map((j) => {
    const mine = traces.slice(at, at + j.fires.length);
    at += j.fires.length;
    return { ...j, traces: mine };
  });
  return { ...batch, jobs };
}

/** The claim with its metrics: skipped occurrences, parked jobs (and who to tell of them). */
export class MeteredClaimStore implements ClaimStore {
  constructor(
    private readonly inner: ClaimStore,
    private readonly metrics: Pick<SchedulerMetrics, 'skipped' | 'parked'>,
    private readonly onParked: (jobIds: readonly string[]) => void = () => {},
  ) {}

  probeDue(req: DueProbeRequest): Promise<DueProbe> {
    return this.inner.probeDue(req);
  }

  async claimDueJobs(req: ClaimRequest, build: ClaimBuilder): Promise<ClaimResult> {
    const result = await this.inner.claimDueJobs(req, build);
    if (result.skips.length > 0) this.metrics.skipped(result.skips);
    this.metrics.parked(result.parked.length);
    if (result.parked.length > 0) this.onParked(result.parked);
    return result;
  }
}
