/** Shared pieces of the fire loop's integration tests: a planner that fires each due occurrence once, and one-shot jobs. */
import { DEFAULT_POLICIES, type JobDefinition } from '@tickwork/domain';
import type { ClaimPlanner } from '@tickwork/store';

/** Fires the job's due occurrence once and completes it. */
export const fireOnce: ClaimPlanner = ({ job }) => ({
  fires: [{ nominalTime: job.nextNominalAt!, scheduledFor: job.nextRunAt! }],
  skips: [],
  next: null,
});

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
