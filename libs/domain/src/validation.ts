/** Field-level validation results shared by every boundary (REST, gRPC, Kafka commands, config). */

/** One problem with one input field, named by its JSON path (e.g. `schedule.time_zone`). */
export interface FieldViolation {
  readonly field: string;
  readonly message: string;
}

export type Validated<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly violations: FieldViolation[] };

/** Thrown where a caller asked for a value that failed validation. */
export class ValidationError extends Error {
  constructor(readonly violations: readonly FieldViolation[]) {
    super(violations.map((v) => `${v.field}: ${v.message}`).join('; '));
    this.name = 'ValidationError';
  }
}

/** Collects violations while reading an untyped JSON object, so one pass reports every bad field. */
export class FieldReader {
  readonly violations: FieldViolation[] = [];

  constructor(private readonly prefix = '') {}

  path(field: string): string {
    return this.prefix ? `${this.prefix}.${field}` : field;
  }

  fail(field: string, message: string): void {
    this.violations.push({ field: this.path(field), message });
  }

  child(field: string): FieldReader {
    return new FieldReader(this.path(field));
  }

  /** Merges a nested reader's violations into this one. */
  adopt(child: FieldReader | readonly FieldViolation[]): void {
    this.violations.push(...(child instanceof FieldReader ? child.violations : child));
  }

  object(raw: unknown, field: string, required: boolean): Record<string, unknown> | undefined {
    if (raw === undefined || raw === null) {
      if (required) this.fail(field, 'is required');
      return undefined;
    }
    if (typeof raw !== 'object' || Array.isArray(raw)) {
      this.fail(field, 'must be an object');
      return undefined;
    }
    return raw as Record<string, unknown>;
  }

  string(
    raw: unknown,
    field: string,
    opts: { required?: boolean; maxLength?: number; pattern?: RegExp; hint?: string } = {},
  ): string | undefined {
    if (raw === undefined || raw === null) {
      if (opts.required) this.fail(field, 'is required');
      return undefined;
    }
    if (typeof raw !== 'string') {
      this.fail(field, 'must be a string');
      return undefined;
    }
    if (opts.required && raw.length === 0) {
      this.fail(field, 'must not be empty');
      return undefined;
    }
    const textProblem = unstorableTextProblem(raw);
    if (textProblem) {
      this.fail(field, textProblem);
      return undefined;
    }
    if (opts.maxLength !== undefined && raw.length > opts.maxLength) {
      this.fail(field, `must be at most ${opts.maxLength} characters`);
      return undefined;
    }
    if (opts.pattern && !opts.pattern.test(raw)) {
      this.fail(field, opts.hint ?? `must match ${opts.pattern.source}`);
      return undefined;
    }
    return raw;
  }

  integer(
    raw: unknown,
    field: string,
    opts: { required?: boolean; min?: number; max?: number } = {},
  ): number | undefined {
    if (raw === undefined || raw === null) {
      if (opts.required) this.fail(field, 'is required');
      return undefined;
    }
    if (typeof raw !== 'number' || !Number.isSafeInteger(raw)) {
      this.fail(field, 'must be an integer');
      return undefined;
    }
    if (opts.min !== undefined && raw < opts.min) {
      this.fail(field, `must be >= ${opts.min}`);
      return undefined;
    }
    if (opts.max !== undefined && raw > opts.max) {
      this.fail(field, `must be <= ${opts.max}`);
      return undefined;
    }
    return raw;
  }

  /** A boolean; absent or null gives `fallback`. */
  boolean(raw: unknown, field: string, fallback: boolean): boolean | undefined {
    if (raw === undefined || raw === null) return fallback;
    if (typeof raw !== 'boolean') {
      this.fail(field, 'must be true or false');
      return undefined;
    }
    return raw;
  }

  number(raw: unknown, field: string, opts: { min?: number; max?: number } = {}): number | undefined {
    if (raw === undefined || raw === null) return undefined;
    if (typeof raw !== 'number' || !Number.isFinite(raw)) {
      this.fail(field, 'must be a number');
      return undefined;
    }
    if (opts.min !== undefined && raw < opts.min) {
      this.fail(field, `must be >= ${opts.min}`);
      return undefined;
    }
    if (opts.max !== undefined && raw > opts.max) {
      this.fail(field, `must be <= ${opts.max}`);
      return undefined;
    }
    return raw;
  }

  oneOf<T extends string>(raw: unknown, field: string, allowed: readonly T[], fallback?: T): T | undefined {
    if (raw === undefined || raw === null) {
      if (fallback === undefined) this.fail(field, 'is required');
      return fallback;
    }
    if (typeof raw !== 'string' || !(allowed as readonly string[]).includes(raw)) {
      this.fail(field, `must be one of ${allowed.join(', ')}`);
      return undefined;
    }
    return raw as T;
  }

  stringMap(raw: unknown, field: string): Record<string, string> | undefined {
    if (raw === undefined || raw === null) return {};
    const obj = this.object(raw, field, false);
    if (!obj) return undefined;
    const out: Record<string, string> = {};
    let ok = true;
    for (const [k, v] of Object.entries(obj)) {
      const keyProblem =
        k === '__proto__'
          ? 'is a reserved name'
          : k.length === 0
            ? 'names must not be empty'
            : unstorableTextProblem(k);
      if (keyProblem) {
        this.fail(`${field}.${k}`, keyProblem.startsWith('names') ? keyProblem : `(the name) ${keyProblem}`);
        ok = false;
        continue;
      }
      if (typeof v !== 'string') {
        this.fail(`${field}.${k}`, 'must be a string');
        ok = false;
        continue;
      }
      const valueProblem = unstorableTextProblem(v);
      if (valueProblem) {
        this.fail(`${field}.${k}`, valueProblem);
        ok = false;
        continue;
      }
      out[k] = v;
    }
    return ok ? out : undefined;
  }

  /** Rejects keys the schema does not know, so typos do not silently fall back to defaults. */
  noUnknownKeys(obj: Record<string, unknown>, known: readonly string[], field?: string): void {
    for (const key of Object.keys(obj)) {
      if (!known.includes(key)) this.fail(field ? `${field}.${key}` : key, 'is not a known field');
    }
  }
}

// eslint-disable-next-line no-control-regex -- control characters are what this looks for
const UNSTORABLE_TEXT = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why text cannot be stored, or undefined: PostgreSQL's text and jsonb refuse U+0000, and a lone
 * UTF-16 surrogate is no Unicode character at all (it has no UTF-8 form). Every boundary refuses
 * both, naming the field, instead of failing in the database.
 */
export function unstorableTextProblem(s: string): string | undefined {
  const m = UNSTORABLE_TEXT.exec(s);
  if (!m) return undefined;
  return m[0] === '\u0000'
    ? `must not contain U+0000 (NUL; at index ${m.index})`
    : `must not contain an unpaired UTF-16 surrogate (at index ${m.index})`;
}

/** The text with every NUL and unpaired surrogate replaced by U+FFFD, for records of refused input. */
export function storableText(s: string): string {
  return unstorableTextProblem(s) === undefined
    ? s
    : s.replace(new RegExp(UNSTORABLE_TEXT.source, 'g'), '\ufffd');
}

/** Parses an ISO-8601 timestamp that carries an explicit offset or Z; undefined when it is not one. */
export function parseInstant(raw: string): Date | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i.exec(raw);
  if (!m) return undefined;
  // Date.parse carries a day past its month's end into the next month (2026-02-30 is read as
  // 2026-03-02): a date that does not exist is refused, not moved.
  if (Number(m[3]) > daysInMonth(Number(m[1]), Number(m[2]))) return undefined;
  const ms = Date.parse(raw);
  return Number.isNaN(ms) ? undefined : new Date(ms);
}

/** Days in a month (1-12) of a proleptic Gregorian year; 31 for a month that is not one (Date.parse refuses it). */
function daysInMonth(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 31;
}
