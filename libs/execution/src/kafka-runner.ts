/**
 * The Kafka target: publishes the job payload to a named topic with the job's key and headers,
 * plus the fire's identity headers so downstream consumers can dedupe. A job may not publish into
 * Tickwork's own topics (it could forge fires or commands): those are refused like an SSRF.
 */
import type { KafkaTarget } from '@tickwork/domain';
import type { AttemptOutcome, TargetRequest, TargetRunner } from './attempt';
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
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(target.headers))
      if (!k.toLowerCase().startsWith('tickwork-')) headers[k] = v;
    const send = this.producer.send(target.topic, {
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
    });
    try {
      // A produce cannot be recalled once sent; an abort only stops us waiting for its ack.
      await (signal ? Promise.race([send, aborted(signal)]) : send);
      return { ok: true, httpStatus: null, error: null, retryable: false };
    } catch (e) {
      if (signal?.aborted) {
        send.catch(() => undefined);
        return {
          ok: false,
          httpStatus: null,
          error: 'ABORTED: the run lease was lost or the executor is stopping',
          retryable: true,
          aborted: true,
        };
      }
      const err = e as Error;
      return { ok: false, httpStatus: null, error: `KAFKA: ${err.name}: ${err.message}`, retryable: true };
    }
  }
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(new Error('aborted'));
    else signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
  });
}
