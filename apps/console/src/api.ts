/** The console's only way to the server: the public REST API under /v1, with the session's bearer token. */

export interface Violation {
  readonly field: string;
  readonly message: string;
}

/** An error answer of the API: its code, message and field violations. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly violations: readonly Violation[],
  ) {
    super(message);
  }
}

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export interface Run {
  job_id: string;
  fire_id: string;
  fence_token: number;
  tenant_id: string;
  status: string;
  attempt: number;
  nominal_time: string;
  scheduled_for: string;
  started_at: string | null;
  finished_at: string | null;
  http_status: number | null;
  error: string | null;
  /** The fire's W3C trace id; null when it was not traced. */
  trace_id: string | null;
  /** What made its fire (SCHEDULE, MANUAL, REPLAY, BACKFILL); null when its fire log row was purged. */
  trigger?: string | null;
}

export interface Schedule {
  kind: 'once' | 'interval' | 'cron' | 'rrule';
  at?: string;
  rule?: string;
  dtstart?: string;
  exdates?: string[];
  every_ms?: number;
  anchor?: string;
  expression?: string;
  time_zone?: string;
  dst_gap?: string;
  dst_repeat?: string;
  start_at?: string;
  end_at?: string;
  max_fires?: number;
}

export interface Job {
  job_id: string;
  tenant_id: string;
  shard: number;
  status: 'SCHEDULED' | 'PAUSED' | 'COMPLETED';
  schedule: Schedule;
  target: { type: 'webhook' | 'kafka'; [k: string]: Json };
  payload: Json;
  policies: { [k: string]: Json };
  labels: Record<string, string>;
  next_run_at: string | null;
  next_nominal_at: string | null;
  fence_token: number;
  fires_count: number;
  version: number;
  etag: string;
  created_at: string;
  updated_at: string;
  last_run?: Run | null;
}

export interface Occurrence {
  outcome: 'FIRED' | 'SKIPPED' | 'COALESCED' | 'DEFERRED';
  nominal_time: string;
  last_nominal_time: string;
  occurrences: number;
  reason: string | null;
  fence_token?: number;
  fire_id?: string;
  trigger?: string;
  scheduled_for?: string;
  claimed_at?: string;
  enqueued_at?: string | null;
  run_status?: string | null;
  recorded_at?: string;
  /** FIRED entries judged LATE or MISSED: first start − nominal time (null: never started when judged). */
  lateness_ms?: number | null;
}

export interface DeadLetter extends Run {
  dead_lettered_at: string;
  replay_fire_id: string | null;
  replayed_at: string | null;
}

export interface PreviewFire {
  at: string;
  local_time: string;
  time_zone: string;
  shifted_from?: string;
}

export interface Whoami {
  actor: string;
  role: 'tenant' | 'admin';
  tenant_id: string | null;
  auth: 'off' | 'required';
  known_tenants: string[];
}

const TOKEN_KEY = 'tickwork.token';

/** The session's token: kept in sessionStorage only (gone when the tab closes). */
export const session = {
  get token(): string | null {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  set token(t: string | null) {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  },
};

/** One REST call; resolves with the JSON body (and headers), rejects with ApiError. */
export async function call<T>(
  method: string,
  path: string,
  opts: { body?: unknown; headers?: Record<string, string>; token?: string | null } = {},
): Promise<{ body: T; headers: Headers }> {
  const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
  const token = opts.token === undefined ? session.token : opts.token;
  if (token) headers.authorization = `Bearer ${token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      // The job's ETag names its definition's version, not its last run or next fire: never reuse a cached answer.
      cache: 'no-store',
      body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
    });
  } catch (e) {
    throw new ApiError(0, 'UNAVAILABLE', `the API did not answer (${String(e)})`, []);
  }
  const text = await res.text();
  let body: unknown = null;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = { message: text };
    }
  }
  if (!res.ok) {
    const b = (body ?? {}) as { error?: string; message?: string; violations?: Violation[] };
    throw new ApiError(
      res.status,
      b.error ?? `HTTP ${res.status}`,
      b.message ?? res.statusText,
      b.violations ?? [],
    );
  }
  return { body: body as T, headers: res.headers };
}

/** A query string from the defined, non-empty values. */
export function qs(params: Record<string, string | number | undefined | null>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== '') u.set(k, String(v));
  const s = u.toString();
  return s ? `?${s}` : '';
}

/** A readable sentence for an error, with its violations. */
export function describeError(e: unknown): string {
  if (e instanceof ApiError) {
    const v = e.violations.map((x) => `${x.field}: ${x.message}`).join('; ');
    return v ? `${e.code}: ${v}` : `${e.code}: ${e.message}`;
  }
  return e instanceof Error ? e.message : String(e);
}
