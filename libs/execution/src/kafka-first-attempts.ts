/**
 * Kafka targets' first attempts, when no run of their fire was ever recorded: one ledger check,
 * one batch of produces, one insert recording the successes (which reads each job's
 * result_events policy), one batch of the results those policies want. The leased way
 * writes a run twice (RUNNING, then final) because a webhook call is long and needs a lease; a
 * produce is short, and a crash between it and the insert only produces again on re-delivery, as
 * a crash after a leased call calls again. A produced message is never produced again by this
 * delivery: its record is retried until it lands. Anything else goes the leased way: a recorded
 * run (a re-delivery), a deleted job, and a failed produce, whose retry is decided and recorded
 * under a lease ('failed'). A single fire is a batch of one.
 */
import {
  shouldPublishResult,
  type Clock,
  type FireEvent,
  type FireKey,
  type FireResult,
  type KafkaTarget,
  type UnleasedRun,
} from '@tickwork/domain';
import type { TargetRunner } from './attempt';
import { runKeyOf, type ExecutionReport, type ExecutorEvents } from './delivery';
import { requestOf, resultOf } from './fire-results';
import type { InFlight } from './in-flight';
import type { FailedUnleased } from './leased-delivery';
import { issueLeaseToken } from './lease-token';
import { givenUp, type LedgerRetry } from './ledger-retry';
import type { FireOutcomeSink } from './outcome-sink';
import type { RunLedger } from './run-ledger';

/** How a first attempt without a lease went: done, its produce failed, or it must take a lease. */
export type Unleased =
  | { readonly kind: 'report'; readonly report: ExecutionReport }
  | FailedUnleased
  | { readonly kind: 'leased' };

const LEASED = { kind: 'leased' } as const;
const ABANDONED = { kind: 'report', report: { kind: 'abandoned' } } as const;
const SAME_FIRE_HERE = {
  kind: 'report',
  report: { kind: 'later', afterMs: 50, why: 'the same fire is running here' },
} as const;

export class KafkaFirstAttempts {
  /** Fires whose first attempt runs here without a lease, by `job_id\u0000fence_token`. */
  private readonly unleased = new Set<string>();

  constructor(
    private readonly runs: RunLedger,
    private readonly kafka: TargetRunner<KafkaTarget>,
    private readonly sink: FireOutcomeSink,
    private readonly ledger: LedgerRetry,
    private readonly inFlight: InFlight,
    private readonly clock: Clock,
    private readonly owner: string,
    private readonly issuer: string,
    private readonly events: ExecutorEvents,
  ) {}

  /**
   * Runs these first attempts (Kafka targets, due) together, one answer each in order. A fire
   * already running here, or twice in `fires`, comes back in 50 ms: the second copy then finds
   * the first's run.
   */
  async run(fires: readonly FireEvent[], stopping: AbortSignal): Promise<Unleased[]> {
    const out = new Array<Unleased>(fires.length);
    const ids = fires.map(runKeyOf);
    const asked: number[] = [];
    ids.forEach((id, i) => {
      if (this.unleased.has(id)) out[i] = SAME_FIRE_HERE;
      else asked.push(i);
    });
    const keys = asked.map((i): FireKey => ({ jobId: fires[i]!.jobId, fenceToken: fires[i]!.fenceToken }));
    const checked = await this.ledger.run(
      'check',
      () =>
        this.runs.mayRunUnleasedMany
          ? this.runs.mayRunUnleasedMany(keys)
          : Promise.all(keys.map((k) => this.runs.mayRunUnleased(k))),
      stopping,
    );
    if (!checked.ok) {
      const report = { kind: 'report', report: givenUp(checked.why) } as const;
      for (const i of asked) out[i] = report;
      return out;
    }
    const allowed = checked.value;
    const mine: number[] = [];
    // Checked again after the read, which another delivery of the same fire may have raced.
    asked.forEach((i, k) => {
      if (!allowed[k]) out[i] = LEASED;
      else if (this.unleased.has(ids[i]!)) out[i] = SAME_FIRE_HERE;
      else {
        this.unleased.add(ids[i]!);
        mine.push(i);
      }
    });
    if (mine.length === 0) return out;
    try {
      return await this.produceAndRecord(fires, mine, out, stopping);
    } finally {
      for (const i of mine) this.unleased.delete(ids[i]!);
    }
  }

  /** Produces the fires at `mine`, records the successes in one insert, publishes their results. */
  private async produceAndRecord(
    fires: readonly FireEvent[],
    mine: readonly number[],
    out: Unleased[],
    stopping: AbortSignal,
  ): Promise<Unleased[]> {
    const began = this.clock.now();
    const calls = mine.map((i) => ({
      target: fires[i]!.target as KafkaTarget,
      request: requestOf(fires[i]!),
    }));
    const sends = this.kafka.runMany
      ? this.kafka.runMany(calls)
      : Promise.all(calls.map((c) => this.kafka.run(c.target, c.request)));
    const outcomes = await this.inFlight.untilStopped(sends, stopping);
    if (outcomes === undefined) {
      for (const i of mine) out[i] = ABANDONED;
      return out;
    }
    const sent: number[] = [];
    const runs: UnleasedRun[] = [];
    const durationMs = this.clock.now() - began;
    mine.forEach((i, k) => {
      const outcome = outcomes[k]!;
      if (!outcome.ok) out[i] = { kind: 'failed', outcome };
      else {
        sent.push(i);
        // Its token lets a retried insert recognise the row an earlier try stored.
        runs.push({
          fire: fires[i]!,
          owner: this.owner,
          durationMs,
          httpStatus: outcome.httpStatus,
          leaseToken: issueLeaseToken(this.issuer),
        });
      }
    });
    if (sent.length === 0) return out;
    // Produced: the records are retried until they land, never produced again.
    const stored = await this.ledger.run(
      'record',
      (retried) => {
        const batch = retried ? runs.map((r) => ({ ...r, retried })) : runs;
        return this.runs.recordUnleasedRuns
          ? this.runs.recordUnleasedRuns(batch)
          : Promise.all(batch.map((r) => this.runs.recordUnleasedRun(r)));
      },
      stopping,
    );
    if (!stored.ok) {
      const report = { kind: 'report', report: givenUp(stored.why) } as const;
      for (const i of sent) out[i] = report;
      return out;
    }
    const recorded = stored.value;
    const results: FireResult[] = [];
    const executed: number[] = [];
    // The results the jobs' result_events policies want, read by the record (absent: published).
    const published: FireResult[] = [];
    sent.forEach((i, k) => {
      const fire = fires[i]!;
      const times = recorded[k];
      if (times) {
        const result = resultOf(fire, times, 'SUCCEEDED', runs[k]!.httpStatus, null);
        results.push(result);
        if (shouldPublishResult(times.resultEvents, 'SUCCEEDED')) published.push(result);
        executed.push(i);
      } else {
        // A concurrent delivery recorded a run of this fire first; that run owns the outcome.
        this.events.onDuplicate?.(fire, 'RECORDED_ELSEWHERE');
        out[i] = { kind: 'report', report: { kind: 'duplicate', reason: 'RECORDED_ELSEWHERE' } };
      }
    });
    if (results.length === 0) return out;
    if (published.length > 0) {
      if (this.sink.publishResults) await this.sink.publishResults(published);
      else await Promise.all(published.map((r) => this.sink.publishResult(r)));
    }
    executed.forEach((i, k) => {
      const result = results[k]!;
      this.events.onExecuted?.(fires[i]!, result);
      out[i] = { kind: 'report', report: { kind: 'executed', outcome: 'SUCCEEDED', result } };
    });
    return out;
  }
}
