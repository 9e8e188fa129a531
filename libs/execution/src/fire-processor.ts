/**
 * The per-message work of the fires and retry consumers: decode (undecodable input is
 * dead-lettered raw with the reason, and acknowledged), hold retries until their not-before, and
 * execute. A retry whose not-before lies beyond its tier's delay is held only for the tier's delay
 * and then re-enqueued on the same tier, so no message holds its partition longer than the tier's
 * delay and a short retry is never stuck behind a long one for more than that.
 */
import { UndecodableMessageError, type EventCodecs, type InboundMessage } from '@tickwork/messaging';
import type { FireEvent } from '@tickwork/domain';
import { bindTraceContext, extractTraceContext, traceCarrier } from '@tickwork/telemetry';
import type { ExecutionReport } from './delivery';
import type { FireExecutor } from './delivery-router';
import { HEADERS, sourceOf, type KafkaOutcomeSink } from './outcome-sink';
import type { MessageProcessor, ProcessResult } from './partition-flow';

export interface FireProcessorEvents {
  onPoison?(message: InboundMessage, reason: string): void;
  onRequeued?(message: InboundMessage, notBefore: number): void;
}

const DONE: ProcessResult = { kind: 'done' };
const REQUEUE_THRESHOLD_MS = 1_000;

export class FireMessageProcessor implements MessageProcessor {
  private readonly tierDelays: ReadonlyMap<string, number>;

  /** `retryTiers`: the retry topics this processor may see, with their delays. */
  constructor(
    private readonly codecs: EventCodecs,
    private readonly executor: FireExecutor,
    private readonly sink: KafkaOutcomeSink,
    retryTiers: readonly { readonly topic: string; readonly delayMs: number }[],
    private readonly events: FireProcessorEvents = {},
    private readonly now: () => number = Date.now,
  ) {
    this.tierDelays = new Map(retryTiers.map((t) => [t.topic, t.delayMs]));
  }

  /** For retry topics: the not-before, capped at the tier's delay after the message was enqueued. */
  holdUntil(message: InboundMessage): number | undefined {
    const tierDelay = this.tierDelays.get(message.topic);
    if (tierDelay === undefined) return undefined;
    const notBefore = notBeforeOf(message);
    if (notBefore === undefined) return undefined;
    return Math.min(notBefore, message.timestamp + tierDelay);
  }

  /** Decodes and executes one fire message. */
  async process(message: InboundMessage, signal: AbortSignal): Promise<ProcessResult> {
    const fire = await this.decode(message);
    if (fire === undefined) return DONE;
    if (this.tierDelays.has(message.topic)) {
      const notBefore = notBeforeOf(message);
      const wait = notBefore === undefined ? 0 : notBefore - this.now();
      // Timers and the wall clock drift apart by a few ms: a retry that is nearly due just waits.
      if (wait > 0 && wait < REQUEUE_THRESHOLD_MS) return { kind: 'later', afterMs: wait };
      if (notBefore !== undefined && wait > 0) {
        await this.sink.requeue(message);
        this.events.onRequeued?.(message, notBefore);
        return DONE;
      }
    }
    return resultOf(await this.executor.execute(fire, signal, { source: sourceOf(message) }));
  }

  /**
   * Fire messages of one partition, decoded and executed together (see FireExecutor.executeMany);
   * retry tiers, whose messages wait for their not-before, one at a time. One result each.
   */
  processMany(messages: readonly InboundMessage[], signal: AbortSignal): Promise<ProcessResult>[] {
    if (messages.some((m) => this.tierDelays.has(m.topic)))
      return messages.map((m) => this.process(m, signal));
    const decoded = Promise.all(messages.map((m) => this.decode(m)));
    const reports = decoded.then((fires) => {
      const kept: number[] = [];
      fires.forEach((f, i) => f !== undefined && kept.push(i));
      const executed = this.executor.executeMany(
        kept.map((i) => fires[i]!),
        signal,
        kept.map((i) => ({ source: sourceOf(messages[i]!) })),
      );
      const byMessage = new Array<Promise<ProcessResult>>(messages.length).fill(Promise.resolve(DONE));
      for (let k = 0; k < kept.length; k++) byMessage[kept[k]!] = executed[k]!.then(resultOf);
      return byMessage;
    });
    return messages.map((_, i) => reports.then((r) => r[i]!));
  }

  /** The fire in `message`, or undefined when it is not one (then dead-lettered raw, with the reason). */
  private async decode(message: InboundMessage): Promise<FireEvent | undefined> {
    let fire: FireEvent;
    try {
      fire = await this.codecs.decodeFire(message.value);
    } catch (e) {
      if (!(e instanceof UndecodableMessageError)) throw e;
      await this.sink.deadLetterRaw(message, e.message);
      this.events.onPoison?.(message, e.message);
      return undefined;
    }
    // The fire carries its trace on: what the executor sends for it continues this trace even
    // when no span is active (nothing exported, no async context).
    if (message.headers.traceparent)
      bindTraceContext(fire, traceCarrier(extractTraceContext(message.headers)));
    return fire;
  }
}

/** What an execution report means for the delivery. */
function resultOf(report: ExecutionReport): ProcessResult {
  switch (report.kind) {
    case 'executed':
    case 'duplicate':
    case 'lease-lost':
      return DONE;
    case 'later':
      return { kind: 'later', afterMs: report.afterMs };
    case 'abandoned':
      return { kind: 'abandon' };
  }
}

function notBeforeOf(message: InboundMessage): number | undefined {
  const raw = message.headers[HEADERS.notBefore];
  if (raw === undefined || !/^\d{1,16}$/.test(raw)) return undefined;
  return Number(raw);
}
