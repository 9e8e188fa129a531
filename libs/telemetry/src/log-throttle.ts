/**
 * Repeated log lines, throttled. With a broker down, kafkajs logs every failed connection
 * attempt of every connection at error level: about 20 lines a second per app here, hundreds in
 * an outage of seconds, which buried the few lines that said what happened. The first line of
 * each kind passes; repeats within the window are counted and reported with the next one that
 * passes.
 */
export class LogThrottle {
  private readonly seen = new Map<string, { until: number; suppressed: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Whether a line of this kind should be written now; if so, how many of its kind were held back
   * since the last one written.
   */
  admit(kind: string): { readonly write: boolean; readonly suppressed: number } {
    const t = this.now();
    const entry = this.seen.get(kind);
    if (entry && t < entry.until) {
      entry.suppressed++;
      return { write: false, suppressed: 0 };
    }
    if (this.seen.size > 1_000) this.forgetExpired(t);
    this.seen.set(kind, { until: t + this.windowMs, suppressed: 0 });
    return { write: true, suppressed: entry?.suppressed ?? 0 };
  }

  /** A kind for a message: its text with the numbers taken out (ports, offsets, counts vary). */
  static kindOf(message: string): string {
    return message.replace(/\d+/g, '#');
  }

  /** The note to append to a written line that stands for `suppressed` held-back ones. */
  note(suppressed: number): string {
    return suppressed > 0 ? ` (and ${suppressed} more like it in the last ${this.windowMs / 1000} s)` : '';
  }

  private forgetExpired(t: number): void {
    for (const [k, e] of this.seen) if (t >= e.until) this.seen.delete(k);
  }
}
