/**
 * FireExecutor: turns each delivery of a fire into at most one effect as far as the ledger can
 * tell. It routes deliveries: a fire published ahead of its time comes back then, one older than
 * the run retention is dead-lettered, Kafka targets' first attempts go together without a lease
 * (KafkaFirstAttempts; a single one is a batch of one), and everything else, with any of those
 * the batch hands on, is delivered under a lease (LeasedDelivery).
 */
import {
  systemClock,
  type Clock,
  type FireEvent,
  type KafkaTarget,
  type WebhookTarget,
} from '@tickwork/domain';
import type { TargetRunner } from './attempt';
import type { DeliveryContext, ExecutionReport, ExecutorEvents, ExecutorOptions } from './delivery';
import { InFlight } from './in-flight';
import { KafkaFirstAttempts } from './kafka-first-attempts';
import { newLeaseIssuer } from './lease-token';
import { LeasedDelivery } from './leased-delivery';
import { DEFAULT_LEDGER_RETRY_MS, LedgerRetry } from './ledger-retry';
import type { FireOutcomeSink } from './outcome-sink';
import { RunHandOff } from './run-hand-off';
import type { RunLedger } from './run-ledger';

export class FireExecutor {
  private readonly leased: LeasedDelivery;
  private readonly firstAttempts: KafkaFirstAttempts;
  private readonly clock: Clock;

  constructor(
    runs: RunLedger,
    webhooks: TargetRunner<WebhookTarget>,
    kafka: TargetRunner<KafkaTarget>,
    private readonly sink: FireOutcomeSink,
    private readonly opts: ExecutorOptions,
    private readonly events: ExecutorEvents = {},
  ) {
    const clock = (this.clock = opts.clock ?? systemClock);
    const issuer = opts.leaseIssuer ?? newLeaseIssuer();
    const inFlight = new InFlight(clock);
    const ledger = new LedgerRetry(
      runs,
      clock,
      inFlight,
      opts.ledgerRetryMs ?? DEFAULT_LEDGER_RETRY_MS,
      events,
    );
    const handOff = new RunHandOff(runs, sink, ledger, clock, events);
    this.leased = new LeasedDelivery(
      runs,
      webhooks,
      kafka,
      handOff,
      ledger,
      inFlight,
      clock,
      opts.random ?? Math.random,
      issuer,
      opts,
      events,
    );
    this.firstAttempts = new KafkaFirstAttempts(
      runs,
      kafka,
      sink,
      ledger,
      inFlight,
      clock,
      opts.owner,
      issuer,
      events,
    );
  }

  /** Executes one delivery of a fire; target failures become outcomes, infrastructure failures throw. */
  execute(fire: FireEvent, stopping: AbortSignal, ctx: DeliveryContext = {}): Promise<ExecutionReport> {
    return this.executeMany([fire], stopping, [ctx])[0]!;
  }

  /**
   * Executes several deliveries (taken from one partition together); one report each, in order.
   * The first attempts of Kafka targets among them that are due go through together: one ledger
   * check, one batch of produces, one insert, one batch of results. Every other delivery, and any
   * of those the batch hands on, is delivered under a lease.
   */
  executeMany(
    fires: readonly FireEvent[],
    stopping: AbortSignal,
    ctxs: readonly DeliveryContext[],
  ): Promise<ExecutionReport>[] {
    const reports = new Array<Promise<ExecutionReport>>(fires.length);
    const together: number[] = [];
    const nowMs = this.clock.now();
    fires.forEach((fire, i) => {
      const age = nowMs - fire.scheduledFor.getTime();
      // A scheduler with a lookahead publishes fires before their time; they still run on time.
      if (age < 0)
        reports[i] = Promise.resolve({ kind: 'later', afterMs: -age, why: 'scheduled in the future' });
      else if (age > this.opts.runRetentionMs) reports[i] = this.refuseOld(fire, ctxs[i] ?? {});
      else if (fire.target.type === 'kafka' && fire.attempt === 1) together.push(i);
      else reports[i] = this.leased.run(fire, stopping, ctxs[i] ?? {});
    });
    if (together.length > 0) {
      const batch = this.firstAttempts.run(
        together.map((i) => fires[i]!),
        stopping,
      );
      together.forEach((i, k) => {
        reports[i] = batch.then((outcomes) => {
          const u = outcomes[k]!;
          if (u.kind === 'report') return u.report;
          return this.leased.run(fires[i]!, stopping, ctxs[i] ?? {}, u.kind === 'failed' ? u : undefined);
        });
      });
    }
    return reports;
  }

  /** A fire older than the run retention: its run record may be gone, so it is dead-lettered unrun. */
  private async refuseOld(fire: FireEvent, ctx: DeliveryContext): Promise<ExecutionReport> {
    const detail = `scheduled for ${fire.scheduledFor.toISOString()}, older than the run retention (${this.opts.runRetentionMs} ms): its run record may be gone, so running it could run it twice`;
    await this.sink.deadLetter(fire, 'OLDER_THAN_RUN_RETENTION', detail, ctx.source);
    this.events.onDeadLettered?.(fire, 'OLDER_THAN_RUN_RETENTION', detail);
    return { kind: 'duplicate', reason: 'OLDER_THAN_RUN_RETENTION' };
  }
}
