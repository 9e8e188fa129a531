/**
 * JobService over in-memory store ports (no I/O): a create is quota-checked and audited once, a
 * refused call is audited with its code, a command applied before is neither applied again nor
 * audited as a refusal, and an idempotency key answers a repeat with the job it created.
 */
import {
  DEFAULT_JOB_LIMITS,
  DuplicateCommandError,
  ValidationError,
  type AuditEntry,
  type DeadLetterRecord,
  type FireEvent,
  type IdempotencyRecord,
  type Job,
  type JobDefinition,
  type JobListPage,
  type JobStatus,
  type JsonValue,
  type MutationMeta,
  type NewJob,
  type PlannedOccurrence,
  type RefusedChange,
} from '@tickwork/domain';
import type { Caller } from './caller';
import { IdempotencyKeyReusedError, QuotaExceededError } from './errors';
import { JobService } from './job-service';
import type { HistoryStore, JobStore, LockedJob } from './ports';

const NOW = new Date('2026-12-01T00:00:00Z');
const acme: Caller = { actor: 'ci', role: 'tenant', tenantId: 'acme', via: 'rest' };
const definition = (jobId: string) => ({
  job_id: jobId,
  schedule: { kind: 'interval', every_ms: 60_000 },
  target: { type: 'kafka', topic: 'orders' },
});

/** The jobs of one tenant in memory; a change's writes land only when its work resolves. */
class MemoryJobStore implements JobStore {
  readonly jobs = new Map<string, Job>();
  /** Every audit event: the successful changes' (outcome OK) and the refusals. */
  readonly audit: { action: string; outcome: string }[] = [];
  private readonly commands = new Set<string>();
  private readonly keys = new Map<string, IdempotencyRecord & { requestSha256: string }>();

  findJob(jobId: string): Promise<Job | null> {
    return Promise.resolve(this.jobs.get(jobId) ?? null);
  }

  listJobs(): Promise<JobListPage> {
    return Promise.reject(new Error('not used here'));
  }

  async mutate<T>(
    jobId: string,
    meta: MutationMeta,
    work: (job: Job | null, locked: LockedJob) => Promise<T>,
  ): Promise<T> {
    const stamp = meta.command && `${meta.command.tenantId}/${meta.command.commandId}`;
    if (stamp && this.commands.has(stamp))
      throw new DuplicateCommandError(meta.command!.tenantId, meta.command!.commandId);
    const locked = new MemoryLockedJob(this, jobId);
    const result = await work(this.jobs.get(jobId) ?? null, locked);
    locked.commit();
    if (stamp) this.commands.add(stamp);
    this.audit.push({ action: meta.audit.action, outcome: 'OK' });
    return result;
  }

  recordCommandRejection(): Promise<boolean> {
    return Promise.resolve(true);
  }

  findIdempotencyKey(tenantId: string, key: string): Promise<IdempotencyRecord | null> {
    return Promise.resolve(this.keys.get(`${tenantId}/${key}`) ?? null);
  }

  recordRefusal(audit: AuditEntry, what: RefusedChange): Promise<void> {
    this.audit.push({ action: audit.action, outcome: what.outcome });
    return Promise.resolve();
  }

  /** LockedJob.claimIdempotencyKey's record, kept when its change commits. */
  keepKey(tenantId: string, key: string, jobId: string, requestSha256: string): void {
    this.keys.set(`${tenantId}/${key}`, { jobId, requestSha256 });
  }
}

class MemoryLockedJob implements LockedJob {
  private readonly writes: (() => void)[] = [];

  constructor(
    private readonly store: MemoryJobStore,
    private readonly jobId: string,
  ) {}

  commit(): void {
    for (const write of this.writes) write();
  }

  liveJobCount(tenantId: string): Promise<number> {
    const live = [...this.store.jobs.values()].filter(
      (j) => j.tenantId === tenantId && j.status !== 'COMPLETED',
    );
    return Promise.resolve(live.length);
  }

  insert(job: NewJob): Promise<Job> {
    const stored: Job = {
      ...job.definition,
      shard: job.shard,
      status: job.next ? 'SCHEDULED' : 'COMPLETED',
      nextRunAt: job.next?.scheduledFor ?? null,
      nextNominalAt: job.next?.nominalTime ?? null,
      fenceToken: 0,
      firesCount: 0,
      version: 1,
      createdAt: NOW,
      updatedAt: NOW,
    };
    this.writes.push(() => this.store.jobs.set(stored.jobId, stored));
    return Promise.resolve(stored);
  }

  replaceDefinition(_d: JobDefinition, _s: JobStatus, _n: PlannedOccurrence | null | 'keep'): Promise<Job> {
    return Promise.reject(new Error('not used here'));
  }

  setStatus(status: 'PAUSED' | 'SCHEDULED'): Promise<Job> {
    const job = this.store.jobs.get(this.jobId)!;
    const changed: Job = { ...job, status, version: job.version + 1 };
    this.writes.push(() => this.store.jobs.set(this.jobId, changed));
    return Promise.resolve(changed);
  }

  delete(): Promise<void> {
    this.writes.push(() => this.store.jobs.delete(this.jobId));
    return Promise.resolve();
  }

  recordFire(): Promise<FireEvent> {
    return Promise.reject(new Error('not used here'));
  }

  deadLetter(): Promise<DeadLetterRecord | null> {
    return Promise.resolve(null);
  }

  markReplayed(): Promise<void> {
    return Promise.reject(new Error('not used here'));
  }

  note(_details: Record<string, JsonValue>): void {}

  claimIdempotencyKey(tenantId: string, key: string, requestSha256: string): Promise<boolean> {
    this.writes.push(() => this.store.keepKey(tenantId, key, this.jobId, requestSha256));
    return Promise.resolve(true);
  }
}

const noHistory = {
  listClaimedAhead: () => Promise.resolve([]),
  listRuns: () => Promise.resolve([]),
} as unknown as HistoryStore;

function setup(maxJobs?: number) {
  const store = new MemoryJobStore();
  const service = new JobService(store, noHistory, {
    shardCount: 4,
    herdJitterMs: 0,
    limits: DEFAULT_JOB_LIMITS,
    now: () => NOW,
    ...(maxJobs !== undefined ? { quotas: () => ({ maxJobs, maxFiresPerSecond: 0 }) } : {}),
  });
  return { store, service };
}

describe('JobService over its store ports', () => {
  it('stores a valid job for the caller tenant, audited once, and refuses past the quota', async () => {
    const { store, service } = setup(1);
    const job = await service.createJob(acme, definition('job-a'));
    expect(job).toMatchObject({ jobId: 'job-a', tenantId: 'acme', status: 'SCHEDULED' });
    // An interval is anchored at its creation: its first occurrence is now.
    expect(job.nextRunAt).toEqual(NOW);
    await expect(service.createJob(acme, definition('job-b'))).rejects.toBeInstanceOf(QuotaExceededError);
    expect([...store.jobs.keys()]).toEqual(['job-a']);
    expect(store.audit).toEqual([
      { action: 'CreateJob', outcome: 'OK' },
      { action: 'CreateJob', outcome: 'RESOURCE_EXHAUSTED' },
    ]);
  });

  it('audits an invalid definition with INVALID_ARGUMENT and stores nothing', async () => {
    const { store, service } = setup();
    await expect(service.createJob(acme, { job_id: 'job-a', schedule: {} })).rejects.toBeInstanceOf(
      ValidationError,
    );
    expect(store.jobs.size).toBe(0);
    expect(store.audit).toEqual([{ action: 'CreateJob', outcome: 'INVALID_ARGUMENT' }]);
  });

  it('does not apply a command twice, nor audit its copy as a refusal', async () => {
    const { store, service } = setup();
    await service.createJob(acme, definition('job-a'));
    const command = { tenantId: 'acme', commandId: 'c-1', type: 'PAUSE' };
    expect((await service.pauseJob(acme, 'job-a', command)).status).toBe('PAUSED');
    await expect(service.pauseJob(acme, 'job-a', command)).rejects.toBeInstanceOf(DuplicateCommandError);
    expect(store.jobs.get('job-a')?.version).toBe(2);
    expect(store.audit.map((a) => `${a.action} ${a.outcome}`)).toEqual(['CreateJob OK', 'PauseJob OK']);
  });

  it('answers a repeat under an idempotency key with the job it created, and refuses the key for another request', async () => {
    const { store, service } = setup();
    const first = await service.createJob(acme, definition('job-a'), undefined, { idempotencyKey: 'k-1' });
    const again = await service.createJob(acme, definition('job-a'), undefined, { idempotencyKey: 'k-1' });
    expect(again).toEqual(first);
    await expect(
      service.createJob(acme, definition('job-b'), undefined, { idempotencyKey: 'k-1' }),
    ).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
    expect([...store.jobs.keys()]).toEqual(['job-a']);
  });
});
