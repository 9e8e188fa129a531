/**
 * The spans of one claim: a `claim jobs` span for the batch (a trace of its own) and a
 * `tickwork.fire` span per claimed occurrence (in the occurrence's trace: the scheduling request's
 * or a new one, see occurrenceParent), linked both ways. Each fire's context is stored in its outbox
 * row and bound to its event object, so every publish of the fire, first or relayed, carries it.
 */
import type { FireEvent } from '@tickwork/domain';
import {
  bindTraceContext,
  linkTo,
  occurrenceCarrier,
  occurrenceParent,
  originCarrier,
  recordFailure,
  spanCarrier,
  spansRecorded,
  startClaimSpan,
  startFireSpan,
  type JobTraceOrigin,
  type Span,
} from '@tickwork/telemetry';

/** The spans of one claim attempt, begun once there is something to trace and ended after the commit. */
export class ClaimTrace {
  private claim: Span | undefined;
  private readonly fires: Span[] = [];

  constructor(
    private readonly shards: number,
    private readonly startedAt: number,
  ) {}

  /**
   * Starts the spans of a claim that claimed or skipped something; returns, per fire, the trace
   * context to store in its outbox row (jsonb text, or null when the fire has no trace).
   */
  begin(
    fires: readonly { readonly shard: number; readonly event: FireEvent; readonly origin?: JobTraceOrigin }[],
    skipped: number,
  ): (string | null)[] {
    // Nothing recorded: no spans, the same contexts (what a no-op fire span would pass on).
    if (!spansRecorded())
      return fires.map((f) => {
        const carrier = occurrenceCarrier(f.origin, f.event.fenceToken);
        bindTraceContext(f.event, carrier);
        return carrier ? JSON.stringify(carrier) : null;
      });
    const claim = startClaimSpan(this.startedAt, { fires: fires.length, skipped, shards: this.shards });
    this.claim = claim;
    const claimLink = linkTo(claim.spanContext(), 'claim');
    const recording = claim.isRecording();
    return fires.map((f) => {
      const { parent, links } = occurrenceParent(f.origin, f.event.fenceToken);
      const span = startFireSpan(f.event, 'SCHEDULE', {
        parent,
        links: recording ? [claimLink, ...links] : links,
        shard: f.shard,
      });
      this.fires.push(span);
      // The exporter keeps the first 128 links (OTEL_SPAN_LINK_COUNT_LIMIT); every fire links back anyway.
      if (recording) claim.addLink(linkTo(span.spanContext(), 'fire'));
      const carrier = spanCarrier(span);
      bindTraceContext(f.event, carrier);
      const stored = originCarrier(carrier);
      return stored ? JSON.stringify(stored) : null;
    });
  }

  /** The claim committed. */
  end(): void {
    for (const s of this.fires) s.end();
    this.claim?.end();
  }

  /** The claim failed and rolled back: its fires did not happen. */
  fail(error: unknown): void {
    for (const s of this.fires) {
      recordFailure(s, error);
      s.end();
    }
    if (this.claim) {
      recordFailure(this.claim, error);
      this.claim.end();
    }
  }
}
