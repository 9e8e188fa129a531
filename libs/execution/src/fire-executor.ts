/**
 * Turns one fire into at most one effect as far as the ledger can tell: take the run's lease in
 * job_runs (a duplicate or a live run elsewhere is skipped), call the target while heartbeating
 * the lease, record the outcome under the lease token, and publish the result.
 */
import type { FireEvent, FireOutcome, FireResult, Run } from '@tickwork/domain';
import type { RunRepository } from '@tickwork/store';
import type { AttemptOutcome, TargetRequest } from './attempt';
import type { KafkaRunner } from './kafka-runner';
import type { WebhookRunner } from './webhook-runner';

export interface ExecutorOptions {
  readonly owner: string;
  readonly runLeaseMs: number;
  readonly heartbeatMs: number;
}

/** Where results and dead letters go; implemented over Kafka by the executor app. */
export interface FireOutcomeSink {
  publishResult(result: FireResult): Promise<void>;
  deadLetter(fire: FireEvent, reason: string): Promise<void>;
}

export type ExecutionReport =
  | { readonly kind: 'executed'; readonly outcome: FireOutcome; readonly result: FireResult }
  | { readonly kind: 'duplicate'; readonly reason: string }
  | { readonly kind: 'lease-lost' };

export interface ExecutorEvents {
  onExecuted?(fire: FireEvent, result: FireResult): void;
  onDuplicate?(fire: FireEvent, reason: string): void;
  onLeaseLost?(fire: FireEvent): void;
}

export class FireExecutor {
  constructor(
    private readonly runs: RunRepository,
    private readonly webhooks: WebhookRunner,
    private readonly kafka: KafkaRunner,
    private readonly sink: FireOutcomeSink,
    private readonly opts: ExecutorOptions,
    private readonly events: ExecutorEvents = {},
  ) {}

  /** Executes one fire; never throws for target failures (they become outcomes). */
  async execute(fire: FireEvent, stopping: AbortSignal): Promise<ExecutionReport> {
    const start = await this.runs.beginRun(fire, this.opts.owner, this.opts.runLeaseMs);
    if (start.action === 'skip') {
      if (start.reason === 'ALREADY_FINAL') {
        // Re-publish the recorded result: a crash may have come between recording it and publishing it.
        const run = await this.runs.findRun(fire);
        if (run) await this.sink.publishResult(resultFromRun(run));
      }
      this.events.onDuplicate?.(fire, start.reason);
      return { kind: 'duplicate', reason: start.reason };
    }

    const key = { jobId: fire.jobId, fenceToken: fire.fenceToken };
    const lease = new AbortController();
    const heartbeat = setInterval(() => {
      this.runs
        .heartbeat(key, start.leaseToken, this.opts.runLeaseMs)
        .then((held) => {
          if (!held) lease.abort();
        })
        .catch(() => undefined);
    }, this.opts.heartbeatMs);
    const startedAt = new Date();
    let outcome: AttemptOutcome;
    try {
      outcome = await this.callTarget(fire, AbortSignal.any([lease.signal, stopping]));
    } finally {
      clearInterval(heartbeat);
    }
    const finishedAt = new Date();
    const status = outcome.ok ? 'SUCCEEDED' : 'DEAD_LETTERED';
    const recorded = await this.runs.completeRun(key, start.leaseToken, { status, httpStatus: outcome.httpStatus, error: outcome.error });
    if (!recorded) {
      // Our lease was taken over while we worked: the new holder owns the outcome.
      this.events.onLeaseLost?.(fire);
      return { kind: 'lease-lost' };
    }
    if (!outcome.ok) await this.sink.deadLetter(fire, outcome.error ?? 'failed');
    const result: FireResult = {
      jobId: fire.jobId,
      tenantId: fire.tenantId,
      fenceToken: fire.fenceToken,
      fireId: fire.fireId,
      scheduledFor: fire.scheduledFor,
      startedAt,
      finishedAt,
      attempt: fire.attempt,
      outcome: status,
      httpStatus: outcome.httpStatus,
      error: outcome.error,
      durationMs: finishedAt.getTime() - startedAt.getTime(),
    };
    await this.sink.publishResult(result);
    this.events.onExecuted?.(fire, result);
    return { kind: 'executed', outcome: status, result };
  }

  private callTarget(fire: FireEvent, signal: AbortSignal): Promise<AttemptOutcome> {
    const req: TargetRequest = {
      jobId: fire.jobId,
      tenantId: fire.tenantId,
      fenceToken: fire.fenceToken,
      fireId: fire.fireId,
      scheduledFor: fire.scheduledFor,
      attempt: fire.attempt,
      body: fire.payload === null ? null : JSON.stringify(fire.payload),
    };
    switch (fire.target.type) {
      case 'webhook':
        return this.webhooks.run(fire.target, req, signal);
      case 'kafka':
        return this.kafka.run(fire.target, req);
    }
  }
}

function resultFromRun(run: Run): FireResult {
  const startedAt = run.startedAt ?? run.scheduledFor;
  const finishedAt = run.finishedAt ?? startedAt;
  return {
    jobId: run.jobId,
    tenantId: run.tenantId,
    fenceToken: run.fenceToken,
    fireId: run.fireId,
    scheduledFor: run.scheduledFor,
    startedAt,
    finishedAt,
    attempt: run.attempt,
    outcome: run.status === 'RUNNING' ? 'FAILED' : run.status,
    httpStatus: run.httpStatus,
    error: run.error,
    durationMs: finishedAt.getTime() - startedAt.getTime(),
  };
}
