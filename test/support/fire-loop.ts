/** Shared pieces of the claim's integration tests: a planner that fires each due occurrence once, one-shot jobs, a claim through a planner. */
import {
  claimBuilderOf,
  DEFAULT_POLICIES,
  type ClaimPlanner,
  type ClaimRequest,
  type ClaimResult,
  type JobDefinition,
} from '@tickwork/domain';
import type { FireStore } from '@tickwork/store';

/** Fires the job's due occurrence once and completes it. */
export const fireOnce: ClaimPlanner = ({ job }) => ({
  fires: [{ nominalTime: job.nextNominalAt!, scheduledFor: job.nextRunAt! }],
  skips: [],
  next: null,
});

/** One claim of `store`, its writes built by the domain's claim builder over `planner` (as the fire loop does). */
export function claimWith(store: FireStore, req: ClaimRequest, planner: ClaimPlanner): Promise<ClaimResult> {
  return store.claimDueJobs(req, claimBuilderOf(planner));
}

/** A one-shot job of tenant `acme` at `at`, aimed at a Kafka topic nothing reads. */
export function oneShot(jobId: string, at: Date): JobDefinition {
  return {
    jobId,
    tenantId: 'acme',
    schedule: { kind: 'once', at },
    target: { type: 'kafka', topic: 'elsewhere', key: null, headers: {} },
    payload: null,
    policies: DEFAULT_POLICIES,
    labels: {},
  };
}
