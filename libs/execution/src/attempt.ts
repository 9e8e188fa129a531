/** The outcome of one attempt at a target, in terms the retry policy understands. */
export interface AttemptOutcome {
  readonly ok: boolean;
  readonly httpStatus: number | null;
  readonly error: string | null;
  /** Worth trying again (network error, timeout, 5xx, 408, 429). */
  readonly retryable: boolean;
  /** The destination was refused by the SSRF guard or the internal-topic guard: never retried. */
  readonly refused?: boolean;
  /** The call was cut short because the run's lease was lost or the executor is stopping. */
  readonly aborted?: boolean;
  /** A delay the target asked for (Retry-After), in ms. */
  readonly retryAfterMs?: number;
}

/** The outcome of a call cut short because the run's lease was lost or the executor is stopping. */
export const ABORTED_CALL: AttemptOutcome = {
  ok: false,
  httpStatus: null,
  error: 'ABORTED: the run lease was lost or the executor is stopping',
  retryable: true,
  aborted: true,
};

/** Runs one fire against its target. Never throws: every failure is an outcome. */
export interface TargetRunner<T> {
  /** `signal` cuts the call short; without one it runs to its own timeout. */
  run(target: T, request: TargetRequest, signal?: AbortSignal): Promise<AttemptOutcome>;
  /** Runs several calls together, outcomes in order (absent: one `run` each). */
  runMany?(calls: readonly TargetCall<T>[]): Promise<AttemptOutcome[]>;
}

/** One call of `runMany`. */
export interface TargetCall<T> {
  readonly target: T;
  readonly request: TargetRequest;
}

/** What a target call carries besides the target itself. */
export interface TargetRequest {
  readonly jobId: string;
  readonly tenantId: string;
  readonly fenceToken: number;
  readonly fireId: string;
  readonly scheduledFor: Date;
  readonly attempt: number;
  /** The payload as JSON text (null when the job has none). */
  readonly body: string | null;
  /** W3C trace context of the call (`traceparent`, `tracestate`), sent with it so the target can continue the trace. */
  readonly traceHeaders?: Readonly<Record<string, string>>;
}
