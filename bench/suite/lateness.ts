/**
 * What the handlers saw in one run: lateness (handler start − nominal time) in an HDR histogram,
 * and how often each job index executed, so missing and duplicate executions are counted.
 */
import * as hdr from 'hdr-histogram-js';

/** One execution as a handler reports it: run, job index, lateness in ms, when it started (epoch ms). */
export interface Execution {
  readonly run: number;
  readonly index: number;
  readonly latenessMs: number;
  readonly startedAt: number;
}

export interface LatenessSummary {
  readonly expected: number;
  readonly executed: number;
  readonly missing: number;
  readonly duplicates: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  /** Last execution start, epoch ms (NaN when nothing ran). */
  readonly lastStartedAt: number;
  /** (lateness ms, fraction of executions at or under it): the CDF for the charts. */
  readonly cdf: [number, number][];
}

const CDF_PERCENTILES = [0, 1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.9, 100];

export class LatenessRecorder {
  // Early executions (a clock step, a system firing ahead) count as 0 ms late; the histogram is unsigned.
  private readonly histogram = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000,
    numberOfSignificantValueDigits: 3,
  });
  private readonly seen: Uint8Array;
  private executedCount = 0;
  private duplicateCount = 0;
  private last = NaN;

  constructor(readonly expected: number) {
    this.seen = new Uint8Array(expected);
  }

  record(e: Execution): void {
    if (e.index < 0 || e.index >= this.expected) return;
    if (this.seen[e.index]! > 0) this.duplicateCount++;
    else this.executedCount++;
    this.seen[e.index] = Math.min(255, this.seen[e.index]! + 1);
    this.histogram.recordValue(Math.min(3_600_000, Math.max(0, Math.round(e.latenessMs))));
    if (!(e.startedAt <= this.last)) this.last = e.startedAt;
  }

  get executed(): number {
    return this.executedCount;
  }

  summary(): LatenessSummary {
    const at = (p: number) => (this.histogram.totalCount > 0 ? this.histogram.getValueAtPercentile(p) : NaN);
    return {
      expected: this.expected,
      executed: this.executedCount,
      missing: this.expected - this.executedCount,
      duplicates: this.duplicateCount,
      p50: at(50),
      p90: at(90),
      p99: at(99),
      max: this.histogram.totalCount > 0 ? this.histogram.maxValue : NaN,
      lastStartedAt: this.last,
      cdf: this.histogram.totalCount > 0 ? CDF_PERCENTILES.map((p) => [at(p), p / 100]) : [],
    };
  }
}

/** Routes executions to the recorder of their run; executions of finished runs are dropped. */
export class ExecutionRouter {
  private readonly runs = new Map<number, (e: Execution) => void>();

  open(run: number, expected: number): LatenessRecorder {
    const recorder = new LatenessRecorder(expected);
    this.runs.set(run, (e) => recorder.record(e));
    return recorder;
  }

  /** Sends a run's executions through `handle` (e.g. to tell occurrences of one schedule apart). */
  route(run: number, handle: (e: Execution) => void): void {
    this.runs.set(run, handle);
  }

  close(run: number): void {
    this.runs.delete(run);
  }

  readonly record = (e: Execution): void => this.runs.get(e.run)?.(e);
}
