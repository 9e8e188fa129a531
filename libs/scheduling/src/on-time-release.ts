/**
 * Fires claimed ahead of their time (lookahead) wait here and go out when due: one send at a
 * time, carrying every held fire that has come due, whichever lane claimed it. Many lanes each
 * sending their own few due fires would queue behind one another on the idempotent producer.
 */
import type { FireEvent } from '@tickwork/domain';
import type { OutboundMessage } from '@tickwork/messaging';

/** Sends fires: the encoded messages when there are some, else the events themselves. */
export interface ReleaseSink {
  send(events: readonly FireEvent[], encoded: readonly OutboundMessage[] | undefined): Promise<void>;
}

interface HeldBatch {
  /** Sorted by scheduled time. */
  readonly events: readonly FireEvent[];
  readonly encoded: readonly OutboundMessage[] | undefined;
  next: number;
  /** When Kafka acknowledged each fire sent so far (epoch ms). */
  readonly ackedAt: number[];
  readonly done: (ackedAt: readonly number[]) => void;
  readonly failed: (e: unknown) => void;
}

/** Of fires sorted by scheduled time, from index `from`: where the run already due at `nowMs` ends. */
export function dueEnd(
  sorted: readonly Pick<FireEvent, 'scheduledFor'>[],
  from: number,
  nowMs: number,
): number {
  let end = from;
  while (end < sorted.length && sorted[end]!.scheduledFor.getTime() <= nowMs) end++;
  return end;
}

export class OnTimeRelease {
  private readonly held = new Set<HeldBatch>();
  private timer: NodeJS.Timeout | undefined;
  private sending = false;

  /** `graceMs`: how long past its time a fire may wait, so fires due a few ms apart share a send. */
  constructor(
    private readonly sink: ReleaseSink,
    private readonly graceMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Holds `events` (sorted by scheduled time; `encoded` in the same order, if given) until each is
   * due; resolves once all were sent, with when each was acknowledged; rejects if a send holding
   * some of them failed (the rest are then not sent).
   */
  hold(events: readonly FireEvent[], encoded?: readonly OutboundMessage[]): Promise<readonly number[]> {
    if (events.length === 0) return Promise.resolve([]);
    return new Promise<readonly number[]>((done, failed) => {
      this.held.add({ events, encoded, next: 0, ackedAt: [], done, failed });
      this.schedule();
    });
  }

  /** Held fires right now. */
  get size(): number {
    let n = 0;
    for (const b of this.held) n += b.events.length - b.next;
    return n;
  }

  private schedule(): void {
    if (this.sending) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    let first = Number.POSITIVE_INFINITY;
    for (const b of this.held) first = Math.min(first, b.events[b.next]!.scheduledFor.getTime());
    if (first === Number.POSITIVE_INFINITY) return;
    const wait = first - this.now();
    if (wait <= 0) void this.release();
    else this.timer = setTimeout(() => void this.release(), wait + this.graceMs);
  }

  private async release(): Promise<void> {
    this.timer = undefined;
    this.sending = true;
    const nowMs = this.now();
    const parts: { batch: HeldBatch; end: number }[] = [];
    const events: FireEvent[] = [];
    const encoded: OutboundMessage[] = [];
    let allEncoded = true;
    for (const b of this.held) {
      const end = dueEnd(b.events, b.next, nowMs);
      if (end === b.next) continue;
      parts.push({ batch: b, end });
      for (let i = b.next; i < end; i++) events.push(b.events[i]!);
      if (b.encoded) for (let i = b.next; i < end; i++) encoded.push(b.encoded[i]!);
      else allEncoded = false;
    }
    try {
      if (events.length > 0) await this.sink.send(events, allEncoded ? encoded : undefined);
      const ackedAt = this.now();
      for (const { batch, end } of parts) {
        for (let i = batch.next; i < end; i++) batch.ackedAt.push(ackedAt);
        batch.next = end;
        if (end === batch.events.length) {
          this.held.delete(batch);
          batch.done(batch.ackedAt);
        }
      }
    } catch (e) {
      for (const { batch } of parts) {
        this.held.delete(batch);
        batch.failed(e);
      }
    } finally {
      this.sending = false;
      this.schedule();
    }
  }
}
