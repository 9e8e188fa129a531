/** Bulk-loads jobs straight into the store, for tests and benchmarks that need many at once. */
import type { Pool } from 'pg';
import {
  DEFAULT_POLICIES,
  policiesToWire,
  scheduleToWire,
  shardOf,
  targetToWire,
  type JobPolicies,
  type Schedule,
  type Target,
} from '@tickwork/domain';

export interface SeedSpec {
  readonly prefix: string;
  readonly count: number;
  readonly shardCount: number;
  readonly tenantOf?: (i: number) => string;
  readonly schedule: (i: number) => Schedule;
  /** First due instant (nominal = claim time: no jitter). */
  readonly firstAt: (i: number) => Date;
  readonly target: Target;
  readonly policies?: JobPolicies;
}

/** Inserts `count` jobs in batches of 5,000 rows per statement; returns their ids. */
export async function seedJobs(pool: Pool, spec: SeedSpec): Promise<string[]> {
  const ids: string[] = [];
  const policies = JSON.stringify(policiesToWire(spec.policies ?? DEFAULT_POLICIES));
  const target = JSON.stringify(targetToWire(spec.target));
  for (let start = 0; start < spec.count; start += 5_000) {
    const cols = {
      id: [] as string[],
      tenant: [] as string[],
      shard: [] as number[],
      kind: [] as string[],
      schedule: [] as string[],
      at: [] as Date[],
    };
    for (let i = start; i < Math.min(spec.count, start + 5_000); i++) {
      const id = `${spec.prefix}-${i}`;
      const s = spec.schedule(i);
      ids.push(id);
      cols.id.push(id);
      cols.tenant.push(spec.tenantOf?.(i) ?? 'acme');
      cols.shard.push(shardOf(id, spec.shardCount));
      cols.kind.push(s.kind);
      cols.schedule.push(JSON.stringify(scheduleToWire(s)));
      cols.at.push(spec.firstAt(i));
    }
    await pool.query(
      `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, next_run_at, next_nominal_at, target, payload, policies)
       SELECT v.id, v.tenant, v.shard, v.kind, v.schedule, 'SCHEDULED', v.at, v.at, $7::jsonb, '{"seeded":true}'::jsonb, $8::jsonb
         FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::jsonb[], $6::timestamptz[]) AS v(id, tenant, shard, kind, schedule, at)`,
      [cols.id, cols.tenant, cols.shard, cols.kind, cols.schedule, cols.at, target, policies],
    );
  }
  return ids;
}
