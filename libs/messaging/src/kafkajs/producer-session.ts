/**
 * An idempotent producer that starts a new producer session when the broker has lost track of
 * its old one.
 *
 * An idempotent producer numbers its batches per partition, and the broker accepts only the next
 * number. After a broker restart the two can disagree for good: a batch the producer sent just
 * before the shutdown counted on its side but was never written, and every later batch is refused
 * with OUT_OF_ORDER_SEQUENCE_NUMBER (or the broker no longer knows the producer id at all). kafkajs
 * keeps sending with the same numbers, so a scheduler's fire loop failed on every tick until it was
 * restarted (the fault suite's broker restart: 352 fires lost to it). The Java client resets its
 * sequences in this case; here a fresh kafkajs producer gets a new producer id (sequences from 0).
 * Re-sending is safe: fires and results are keyed and deduplicated by their consumers.
 */

/** Broker errors after which a producer's idempotence session cannot go on. */
const SESSION_LOST = new Set([
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
  'UNKNOWN_PRODUCER_ID',
  'INVALID_PRODUCER_EPOCH',
  'INVALID_PRODUCER_ID_MAPPING',
]);

/** Whether `e` (or an error it wraps or aggregates) says the broker lost this producer's idempotence session. */
export function isProducerSessionLost(e: unknown, depth = 0): boolean {
  if (!e || typeof e !== 'object' || depth > 5) return false;
  const err = e as { type?: unknown; cause?: unknown; originalError?: unknown; errors?: unknown };
  if (typeof err.type === 'string' && SESSION_LOST.has(err.type)) return true;
  if (Array.isArray(err.errors) && err.errors.some((x) => isProducerSessionLost(x, depth + 1))) return true;
  return isProducerSessionLost(err.cause ?? err.originalError, depth + 1);
}

/** The producer operations a session needs. */
export interface SessionProducer {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
}

/** Holds the current producer and replaces it (once, however many sends noticed) when its session is lost. */
export class ProducerSession<P extends SessionProducer> {
  private replacing: Promise<P> | undefined;

  constructor(
    private current: P,
    private readonly create: () => P,
    private readonly onRenewed: (reason: string) => void = () => undefined,
  ) {}

  /** Runs `op` on the current producer; after a lost session, once more on a new one. */
  async run<T>(op: (producer: P) => Promise<T>): Promise<T> {
    const used = this.current;
    try {
      return await op(used);
    } catch (e) {
      if (!isProducerSessionLost(e)) throw e;
      return op(await this.renew(used, (e as Error).message));
    }
  }

  /** Closes the current producer. */
  async close(): Promise<void> {
    await this.replacing?.catch(() => undefined);
    await this.current.disconnect();
  }

  private renew(lost: P, reason: string): Promise<P> {
    // Sends that failed on a producer already replaced use its successor.
    if (lost !== this.current) return Promise.resolve(this.current);
    this.replacing ??= (async () => {
      const next = this.create();
      await next.connect();
      this.current = next;
      this.onRenewed(reason);
      void lost.disconnect().catch(() => undefined);
      return next;
    })().finally(() => {
      this.replacing = undefined;
    });
    return this.replacing;
  }
}
