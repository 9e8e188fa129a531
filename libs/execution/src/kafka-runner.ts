/**
 * The Kafka target: publishes the job payload to a named topic with the job's key and headers,
 * plus the fire's identity headers so downstream consumers can dedupe. A job may not publish into
 * Tickwork's own topics (it could forge fires or commands): those are refused like an SSRF.
 */
import type { KafkaTarget } from '@tickwork/domain';
import type { OutboundMessage } from '@tickwork/messaging';
import {
  ABORTED_CALL,
  type AttemptOutcome,
  type TargetCall,
  type TargetRequest,
  type TargetRunner,
} from './attempt';
import type { BatchingProducer } from './batching-producer';

const TOPIC_NAME = /^[A-Za-z0-9._-]{1,249}$/;

export class KafkaRunner implements TargetRunner<KafkaTarget> {
  private readonly forbidden: ReadonlySet<string>;

  /** `internalTopics`: Tickwork's own topics, which no job may publish to. */
  constructor(
    private readonly producer: BatchingProducer,
    internalTopics: readonly string[],
  ) {
    this.forbidden = new Set(internalTopics);
  }

  /** Publishes once; resolves with an outcome (never throws). */
  async run(target: KafkaTarget, req: TargetRequest, signal?: AbortSignal): Promise<AttemptOutcome> {
    const refused = this.refusal(target);
    if (refused) return refused;
    const send = this.producer.send(target.topic, messageOf(target, req));
    try {
      // A produce cannot be recalled once sent; an abort only stops us waiting for its ack.
      await (signal ? Promise.race([send, aborted(signal)]) : send);
      return SENT;
    } catch (e) {
      if (signal?.aborted) {
        send.catch(() => undefined);
        return ABORTED_CALL;
      }
      return failedSend(e);
    }
  }

  /** Publishes each call once, all in the same produce batches; outcomes in order (never throws). */
  async runMany(calls: readonly TargetCall<KafkaTarget>[]): Promise<AttemptOutcome[]> {
    const outcomes = new Array<AttemptOutcome>(calls.length);
    const byTopic = new Map<string, number[]>();
    calls.forEach((c, i) => {
      const refused = this.refusal(c.target);
      if (refused) outcomes[i] = refused;
      else {
        const list = byTopic.get(c.target.topic);
        if (list) list.push(i);
        else byTopic.set(c.target.topic, [i]);
      }
    });
    await Promise.all(
      [...byTopic].map(async ([topic, indices]) => {
        const errors = await this.producer.sendMany(
          topic,
          indices.map((i) => messageOf(calls[i]!.target, calls[i]!.request)),
        );
        indices.forEach((i, k) => (outcomes[i] = errors[k] === undefined ? SENT : failedSend(errors[k])));
      }),
    );
    return outcomes;
  }

  /** Why a target may not be published to, or undefined when it may. */
  private refusal(target: KafkaTarget): AttemptOutcome | undefined {
    if (!TOPIC_NAME.test(target.topic))
      return {
        ok: false,
        httpStatus: null,
        error: `INVALID_TARGET: ${JSON.stringify(target.topic)} is not a Kafka topic name`,
        retryable: false,
      };
    if (this.forbidden.has(target.topic) || target.topic.startsWith('__') || target.topic === '_schemas') {
      return {
        ok: false,
        httpStatus: null,
        error: `topic ${target.topic} is internal to Tickwork or Kafka`,
        retryable: false,
        refused: true,
      };
    }
    return undefined;
  }
}

const SENT: AttemptOutcome = { ok: true, httpStatus: null, error: null, retryable: false };

function failedSend(e: unknown): AttemptOutcome {
  const err = e as Error;
  return { ok: false, httpStatus: null, error: `KAFKA: ${err.name}: ${err.message}`, retryable: true };
}

/** The target's message: the payload, the job's key and headers, and the fire's identity headers. */
function messageOf(target: KafkaTarget, req: TargetRequest): OutboundMessage {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(target.headers))
    if (!k.toLowerCase().startsWith('tickwork-')) headers[k] = v;
  return {
    key: target.key ?? req.jobId,
    value: req.body === null ? null : Buffer.from(req.body),
    headers: {
      ...headers,
      ...req.traceHeaders,
      'tickwork-job-id': req.jobId,
      'tickwork-tenant-id': req.tenantId,
      'tickwork-fence-token': String(req.fenceToken),
      'tickwork-fire-id': req.fireId,
      'tickwork-scheduled-for': req.scheduledFor.toISOString(),
      'tickwork-attempt': String(req.attempt),
    },
  };
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(new Error('aborted'));
    else signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
  });
}
