/** REST for the console's extra views: who the caller is, the cluster (admins), lateness from the ledger. */
import { Controller, Get, Headers, Inject, Query } from '@nestjs/common';
import type { TenantRegistry } from '@tickwork/config';
import { ValidationError, type JsonValue, type LatenessRow } from '@tickwork/domain';
import { InsightService } from '@tickwork/jobs';
import { Authenticator } from '../auth';
import { TENANTS } from '../tokens';

type Wire = Record<string, JsonValue>;
type Query = Record<string, string | string[] | undefined>;

function one(q: Query, name: string): string | undefined {
  const v = q[name];
  if (Array.isArray(v)) throw new ValidationError([{ field: name, message: 'must be given once' }]);
  return v;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);
const rowJson = (r: LatenessRow): Wire => ({ key: r.key, runs: r.runs, p50_ms: r.p50Ms, p99_ms: r.p99Ms });

@Controller('v1')
export class InsightController {
  constructor(
    private readonly insight: InsightService,
    private readonly auth: Authenticator,
    @Inject(TENANTS) private readonly tenants: TenantRegistry,
  ) {}

  /** The caller as the server sees it: role, tenant, and whether auth is off (the console's banner). */
  @Get('whoami')
  whoami(@Headers('authorization') authz: string | undefined): Wire {
    const caller = this.auth.authenticate(authz, 'rest');
    return {
      actor: caller.actor,
      role: caller.role,
      tenant_id: caller.tenantId,
      auth: this.tenants.authMode,
      // An admin may switch to any tenant; these are the ones the registry names.
      known_tenants: caller.role === 'admin' ? [...this.tenants.tenantIds] : [],
    };
  }

  @Get('cluster')
  async cluster(@Headers('authorization') authz: string | undefined): Promise<Wire> {
    const c = await this.insight.cluster(this.auth.authenticate(authz, 'rest'));
    return {
      shards: c.shards.map((s) => ({
        shard: s.shard,
        owner: s.owner,
        epoch: s.epoch,
        lease_expires_at: iso(s.leaseExpiresAt),
        due: s.due,
        oldest_due_age_seconds: s.oldestDueAgeSeconds,
        outbox_pending: s.outboxPending,
        outbox_oldest_age_seconds: s.outboxOldestAgeSeconds,
      })),
      executors: c.executors.map((e) => ({ owner: e.owner, running: e.running, retrying: e.retrying })),
      consumer_lag: c.consumerLag.map((l) => ({
        group: l.group,
        topic: l.topic,
        lag: l.lag,
        partitions: l.partitions,
        ...(l.error ? { error: l.error } : {}),
      })),
      observed_at: new Date().toISOString(),
    };
  }

  @Get('lateness')
  async lateness(@Headers('authorization') authz: string | undefined, @Query() q: Query): Promise<Wire> {
    const r = await this.insight.lateness(this.auth.authenticate(authz, 'rest'), {
      window: one(q, 'window'),
      tenantId: one(q, 'tenant_id'),
      jobId: one(q, 'job_id'),
    });
    return {
      window: r.window,
      buckets: r.buckets.map((b) => ({
        start: b.start.toISOString(),
        runs: b.runs,
        p50_ms: b.p50Ms,
        p99_ms: b.p99Ms,
      })),
      overall: { p50_ms: r.overall.p50Ms, p99_ms: r.overall.p99Ms },
      counts: {
        fired: r.counts.fired,
        retried: r.counts.retried,
        dead_lettered: r.counts.deadLettered,
        skipped: r.counts.skipped,
      },
      by_job: r.byJob.map(rowJson),
      by_tenant: r.byTenant.map(rowJson),
      truncated: r.truncated,
    };
  }
}
