/**
 * The instants Tickwork accepts, stores and sends: 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z.
 *
 * Every store and wire can hold this range: PostgreSQL's timestamptz (4713 BC to 294276 AD, but no
 * year 0 in ISO input, and JavaScript writes years outside 0000-9999 as ±YYYYYY, which it does not
 * read), Avro's timestamp-millis (a long), protobuf's Timestamp (0001-01-01 to 9999-12-31) and
 * RFC 3339 (four-digit years). A scheduler has no use for instants before the Unix epoch. Every
 * boundary (REST, gRPC, Kafka commands, previews) refuses an instant outside it, naming the field;
 * a schedule whose next occurrence would fall after its end is over (the job completes).
 */

/** 1970-01-01T00:00:00.000Z. */
export const EARLIEST_INSTANT_MS = 0;
/** 9999-12-31T23:59:59.999Z. */
export const LATEST_INSTANT_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
/** The range in words, for error messages and docs. */
export const INSTANT_RANGE = '1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z';

/** Whether `ms` (epoch milliseconds) is an instant Tickwork accepts. */
export function isInstantInRange(ms: number): boolean {
  return ms >= EARLIEST_INSTANT_MS && ms <= LATEST_INSTANT_MS;
}

/** The violation message for an instant outside the range, or undefined when it is inside. */
export function instantRangeProblem(at: Date): string | undefined {
  const ms = at.getTime();
  if (isInstantInRange(ms)) return undefined;
  const shown = Number.isFinite(ms) ? at.toISOString() : 'an invalid date';
  return `must be within ${INSTANT_RANGE}; got ${shown}`;
}

/** Longest duration a policy may name (a catch-up window): 100 years, so instant arithmetic stays finite. */
export const MAX_POLICY_DURATION_MS = 100 * 366 * 86_400_000;
