/** Create / edit a job: every schedule kind, per-field messages from the API's violations, a live preview. */
import { useEffect, useState } from 'preact/hooks';
import {
  ApiError,
  call,
  describeError,
  type Job,
  type Json,
  type PreviewFire,
  type Schedule,
  type Violation,
} from '../api';
import { dstNote, labelsText, parseLabels, scheduleInWords } from '../format';
import { ErrorBox, jobHref, navigate, useLoad, When, type Ctx } from '../ui';

interface Form {
  job_id: string;
  tenant_id: string;
  kind: 'once' | 'interval' | 'cron' | 'rrule';
  expression: string;
  rule: string;
  dtstart: string;
  /** Comma-separated local wall times. */
  exdates: string;
  time_zone: string;
  dst_gap: string;
  dst_repeat: string;
  every_ms: string;
  anchor: string;
  at: string;
  start_at: string;
  end_at: string;
  max_fires: string;
  target_type: 'webhook' | 'kafka';
  url: string;
  method: string;
  headers: string;
  timeout_ms: string;
  topic: string;
  key: string;
  payload: string;
  misfire: string;
  overlap: string;
  jitter_ms: string;
  tolerance_ms: string;
  slo_metrics: string;
  result_events: string;
  max_attempts: string;
  initial_backoff_ms: string;
  labels: string;
}

function inAMinute(): string {
  const d = new Date(Date.now() + 60_000);
  d.setUTCSeconds(0, 0);
  return d.toISOString().replace('.000Z', 'Z');
}

function blank(tenant: string | null): Form {
  return {
    job_id: '',
    tenant_id: tenant ?? '',
    kind: 'cron',
    expression: '0 9 * * MON-FRI',
    rule: 'FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0',
    dtstart: new Date().toISOString().slice(0, 11) + '00:00:00',
    exdates: '',
    time_zone: 'UTC',
    dst_gap: 'AUTO',
    dst_repeat: 'AUTO',
    every_ms: '60000',
    anchor: '',
    at: inAMinute(),
    start_at: '',
    end_at: '',
    max_fires: '',
    target_type: 'webhook',
    url: '',
    method: 'POST',
    headers: '',
    timeout_ms: '',
    topic: '',
    key: '',
    payload: '{}',
    misfire: 'FIRE_ONCE',
    overlap: 'ALLOW',
    jitter_ms: '0',
    tolerance_ms: '',
    slo_metrics: 'off',
    result_events: 'ALL',
    max_attempts: '',
    initial_backoff_ms: '',
    labels: '',
  };
}

const str = (v: Json | undefined): string =>
  v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v);

function fromJob(j: Job): Form {
  const s = j.schedule;
  const t = j.target;
  const retry = (j.policies.retry ?? {}) as Record<string, Json>;
  return {
    ...blank(j.tenant_id),
    job_id: j.job_id,
    kind: s.kind,
    expression: s.expression ?? '',
    rule: s.rule ?? 'FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0',
    dtstart: s.dtstart ?? new Date().toISOString().slice(0, 11) + '00:00:00',
    exdates: (s.exdates ?? []).join(', '),
    time_zone: s.time_zone ?? 'UTC',
    dst_gap: s.dst_gap ?? 'AUTO',
    dst_repeat: s.dst_repeat ?? 'AUTO',
    every_ms: s.every_ms !== undefined ? String(s.every_ms) : '60000',
    anchor: s.anchor ?? '',
    at: s.at ?? inAMinute(),
    start_at: s.start_at ?? '',
    end_at: s.end_at ?? '',
    max_fires: s.max_fires !== undefined ? String(s.max_fires) : '',
    target_type: t.type,
    url: str(t.url),
    method: str(t.method) || 'POST',
    headers: t.headers && Object.keys(t.headers as object).length ? JSON.stringify(t.headers, null, 2) : '',
    timeout_ms: str(t.timeout_ms),
    topic: str(t.topic),
    key: str(t.key),
    payload: JSON.stringify(j.payload ?? null, null, 2),
    misfire: str(j.policies.misfire) || 'FIRE_ONCE',
    overlap: str(j.policies.overlap) || 'ALLOW',
    jitter_ms: str(j.policies.jitter_ms) || '0',
    tolerance_ms: str(j.policies.tolerance_ms),
    slo_metrics: j.policies.slo_metrics === true ? 'on' : 'off',
    result_events: str(j.policies.result_events) || 'ALL',
    max_attempts: str(retry.max_attempts),
    initial_backoff_ms: str(retry.initial_backoff_ms),
    labels: labelsText(j.labels),
  };
}

/** Numbers stay numbers only when they look like one: the API then names a bad one itself. */
const numberish = (v: string): Json => (/^-?\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : v);

function scheduleOf(f: Form): Schedule {
  const opt = (o: Record<string, Json>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== ''));
  const common = opt({
    start_at: f.start_at,
    end_at: f.end_at,
    max_fires: f.max_fires ? numberish(f.max_fires) : '',
  });
  if (f.kind === 'once') return { kind: 'once', at: f.at };
  if (f.kind === 'interval')
    return {
      kind: 'interval',
      every_ms: numberish(f.every_ms) as number,
      ...opt({ anchor: f.anchor }),
      ...common,
    };
  if (f.kind === 'rrule')
    return {
      kind: 'rrule',
      rule: f.rule,
      dtstart: f.dtstart,
      time_zone: f.time_zone,
      exdates: f.exdates
        .split(',')
        .map((e) => e.trim())
        .filter((e) => e !== ''),
      dst_gap: f.dst_gap,
      dst_repeat: f.dst_repeat,
      ...common,
    };
  return {
    kind: 'cron',
    expression: f.expression,
    time_zone: f.time_zone,
    dst_gap: f.dst_gap,
    dst_repeat: f.dst_repeat,
    ...common,
  };
}

/** The request body, or client-side violations for what cannot even be sent (bad JSON). */
function bodyOf(f: Form, creating: boolean): { body: Record<string, Json> } | { violations: Violation[] } {
  const violations: Violation[] = [];
  const json = (text: string, field: string): Json | undefined => {
    if (!text.trim()) return undefined;
    try {
      return JSON.parse(text) as Json;
    } catch (e) {
      violations.push({ field, message: `is not valid JSON (${(e as Error).message})` });
      return undefined;
    }
  };
  const labels = parseLabels(f.labels);
  if ('error' in labels) violations.push({ field: 'labels', message: labels.error as string });
  const headers = json(f.headers, 'target.headers');
  const payload = json(f.payload, 'payload');
  const target: Record<string, Json> =
    f.target_type === 'webhook'
      ? { type: 'webhook', url: f.url, method: f.method }
      : { type: 'kafka', topic: f.topic, ...(f.key ? { key: f.key } : {}) };
  if (headers !== undefined) target.headers = headers;
  if (f.target_type === 'webhook' && f.timeout_ms) target.timeout_ms = numberish(f.timeout_ms);
  const retry: Record<string, Json> = {};
  if (f.max_attempts) retry.max_attempts = numberish(f.max_attempts);
  if (f.initial_backoff_ms) retry.initial_backoff_ms = numberish(f.initial_backoff_ms);
  const body: Record<string, Json> = {
    schedule: scheduleOf(f) as unknown as Json,
    target,
    payload: payload ?? null,
    policies: {
      misfire: f.misfire,
      overlap: f.overlap,
      jitter_ms: numberish(f.jitter_ms || '0'),
      ...(f.tolerance_ms ? { tolerance_ms: numberish(f.tolerance_ms) } : {}),
      ...(f.slo_metrics === 'on' ? { slo_metrics: true } : {}),
      result_events: f.result_events,
      ...(Object.keys(retry).length ? { retry } : {}),
    },
    labels: 'error' in labels ? {} : labels,
  };
  if (creating) {
    if (f.job_id) body.job_id = f.job_id;
    if (f.tenant_id) body.tenant_id = f.tenant_id;
  }
  return violations.length ? { violations } : { body };
}

const ZONES: string[] = (() => {
  try {
    return (Intl as unknown as { supportedValuesOf(k: string): string[] }).supportedValuesOf('timeZone');
  } catch {
    return ['UTC', 'Europe/London', 'America/New_York'];
  }
})();

function Field(props: {
  id: keyof Form;
  api: string;
  label: string;
  form: Form;
  set: (f: Form) => void;
  errors: Violation[];
  clearErrors: (api: string) => void;
  hint?: string;
  type?: string;
  list?: string;
  textarea?: boolean;
  options?: string[];
  required?: boolean;
}) {
  const { id, form, set } = props;
  const mine = props.errors.filter((v) => covers(props.api, v.field));
  const errId = `err-${id}`;
  const hintId = `hint-${id}`;
  const describedBy =
    [mine.length ? errId : '', props.hint ? hintId : ''].filter(Boolean).join(' ') || undefined;
  const common = {
    id: `f-${id}`,
    name: id,
    'aria-invalid': mine.length ? ('true' as const) : undefined,
    'aria-describedby': describedBy,
    'data-field': props.api,
  };
  const value = form[id] as string;
  const onInput = (e: Event) => {
    set({ ...form, [id]: (e.currentTarget as HTMLInputElement).value });
    // An edited field's message is about its old value: it goes until the API says otherwise.
    if (mine.length) props.clearErrors(props.api);
  };
  return (
    <div class={`field ${mine.length ? 'invalid' : ''}`}>
      <label for={`f-${id}`}>{props.label}</label>
      {props.options ? (
        <select {...common} value={value} onChange={onInput}>
          {props.options.map((o) => (
            <option key={o}>{o}</option>
          ))}
        </select>
      ) : props.textarea ? (
        <textarea {...common} rows={4} value={value} onInput={onInput} spellcheck={false} />
      ) : (
        <input
          {...common}
          type={props.type ?? 'text'}
          list={props.list}
          value={value}
          onInput={onInput}
          required={props.required}
        />
      )}
      {props.hint && (
        <p class="hint" id={hintId}>
          {props.hint}
        </p>
      )}
      {mine.length > 0 && (
        <p class="field-error" id={errId}>
          {mine.map((v) => `${v.field === props.api ? '' : `${v.field}: `}${v.message}`).join('; ')}
        </p>
      )}
    </div>
  );
}

/** The API fields that have an input in the form as it stands; other violations are listed at the top. */
function fieldsShown(f: Form, creating: boolean, admin: boolean): string[] {
  const schedule =
    f.kind === 'cron'
      ? ['expression', 'time_zone', 'dst_gap', 'dst_repeat']
      : f.kind === 'rrule'
        ? ['rule', 'dtstart', 'exdates', 'time_zone', 'dst_gap', 'dst_repeat']
        : f.kind === 'interval'
          ? ['every_ms', 'anchor']
          : ['at'];
  if (f.kind !== 'once') schedule.push('start_at', 'end_at', 'max_fires');
  const target =
    f.target_type === 'webhook'
      ? ['type', 'url', 'method', 'timeout_ms', 'headers']
      : ['type', 'topic', 'key', 'headers'];
  return [
    ...(creating ? ['job_id'] : []),
    ...(creating && admin ? ['tenant_id'] : []),
    'labels',
    'payload',
    'schedule',
    'schedule.kind',
    ...schedule.map((x) => `schedule.${x}`),
    ...target.map((x) => `target.${x}`),
    'policies.misfire',
    'policies.overlap',
    'policies.jitter_ms',
    'policies.tolerance_ms',
    'policies.slo_metrics',
    'policies.result_events',
    'policies.retry.max_attempts',
    'policies.retry.initial_backoff_ms',
  ];
}

const covers = (api: string, field: string): boolean =>
  field === api || field.startsWith(`${api}.`) || field.startsWith(`${api}[`);

function Preview(props: { schedule: Schedule; dstRepeat: string }) {
  const [state, setState] = useState<{ fires?: PreviewFire[]; error?: unknown }>({});
  const key = JSON.stringify(props.schedule);
  useEffect(() => {
    let live = true;
    // Debounced: the preview follows typing without a request per key stroke.
    const timer = setTimeout(() => {
      call<{ fires: PreviewFire[] }>('POST', '/v1/schedules/preview', {
        body: { schedule: props.schedule, count: 10 },
      })
        .then((r) => live && setState({ fires: r.body.fires }))
        .catch((e: unknown) => live && setState({ error: e }));
    }, 300);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [key]);
  return (
    <aside class="card preview" aria-labelledby="preview-title" aria-live="polite">
      <h2 id="preview-title">Preview: next fires</h2>
      <p class="muted">{scheduleInWords(props.schedule)}</p>
      {state.error ? (
        <p class="field-error">{describeError(state.error)}</p>
      ) : (
        <ol class="fires">
          {(state.fires ?? []).map((f) => {
            const note = dstNote(f, props.dstRepeat);
            return (
              <li key={f.at}>
                <When iso={f.at} zone={f.time_zone} compact />
                {note && <span class="dst-note">DST: {note}</span>}
              </li>
            );
          })}
        </ol>
      )}
      {state.fires && state.fires.length === 0 && <p class="empty">This schedule never fires.</p>}
    </aside>
  );
}

export function EditView(props: { ctx: Ctx; jobId?: string }) {
  const { ctx, jobId } = props;
  const creating = !jobId;
  const existing = useLoad(
    () =>
      jobId
        ? call<Job>('GET', `/v1/jobs/${encodeURIComponent(jobId)}`).then((r) => r.body)
        : Promise.resolve(null),
    [jobId],
  );
  const [form, setForm] = useState<Form>(() => blank(ctx.tenant));
  const [errors, setErrors] = useState<Violation[]>([]);
  const [failure, setFailure] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (existing.data) setForm(fromJob(existing.data));
  }, [existing.data]);

  const submit = async (e: Event) => {
    e.preventDefault();
    setFailure(null);
    const built = bodyOf(form, creating);
    if ('violations' in built) {
      setErrors(built.violations);
      return;
    }
    setBusy(true);
    try {
      const r = creating
        ? await call<Job>('POST', '/v1/jobs', { body: built.body })
        : await call<Job>('PATCH', `/v1/jobs/${encodeURIComponent(jobId)}`, {
            body: built.body,
            // The version this form was loaded from: a concurrent edit is refused, not overwritten.
            headers: existing.data ? { 'if-match': `"${existing.data.etag}"` } : {},
          });
      setErrors([]);
      navigate(jobHref(r.body.job_id).slice(1));
    } catch (err) {
      if (err instanceof ApiError && err.violations.length) setErrors([...err.violations]);
      else if (err instanceof ApiError && err.status === 412)
        setFailure(
          new Error('Someone changed this job since you opened the form; reload to edit their version.'),
        );
      else setFailure(err);
    } finally {
      setBusy(false);
    }
  };

  if (jobId && existing.error) return <ErrorBox error={existing.error} />;
  if (jobId && !existing.data) return <p class="muted">Loading…</p>;
  const f = {
    form,
    set: setForm,
    errors,
    clearErrors: (api: string) => setErrors((all) => all.filter((v) => !covers(api, v.field))),
  };
  const shown = fieldsShown(form, creating, ctx.me.role === 'admin');
  const unplaced = errors.filter((v) => !shown.some((api) => covers(api, v.field)));
  return (
    <section aria-labelledby="edit-title">
      <p class="crumbs">
        <a href="#/jobs">Jobs</a> / {creating ? 'new' : <a href={jobHref(jobId)}>{jobId}</a>}
        {creating ? '' : ' / edit'}
      </p>
      <h1 id="edit-title">{creating ? 'New job' : `Edit ${jobId}`}</h1>
      <div class="edit-grid">
        <form
          onSubmit={submit}
          class="card job-form"
          noValidate
          aria-describedby={errors.length ? 'form-errors' : undefined}
        >
          {errors.length > 0 && (
            <div class="error-box" role="alert" id="form-errors">
              The API refused the job: {errors.length} field{errors.length === 1 ? '' : 's'} to fix.
              {unplaced.length > 0 && (
                <ul>
                  {unplaced.map((v) => (
                    <li key={v.field}>
                      {v.field}: {v.message}
                    </li>
                  ))}
                </ul>
              )}
            </div>
          )}
          <ErrorBox error={failure} />
          <fieldset>
            <legend>Job</legend>
            {creating && (
              <Field
                {...f}
                id="job_id"
                api="job_id"
                label="Job id"
                hint="Optional: a UUID is generated when empty."
              />
            )}
            {creating && ctx.me.role === 'admin' && (
              <Field
                {...f}
                id="tenant_id"
                api="tenant_id"
                label="Tenant"
                hint="Empty: default."
                list="known-tenants"
              />
            )}
            <Field {...f} id="labels" api="labels" label="Labels" hint="key=value, comma-separated" />
          </fieldset>
          <fieldset>
            <legend>Schedule</legend>
            <div class="radios" role="radiogroup" aria-label="Schedule kind">
              {(['cron', 'rrule', 'interval', 'once'] as const).map((k) => (
                <label key={k}>
                  <input
                    type="radio"
                    name="kind"
                    value={k}
                    checked={form.kind === k}
                    onChange={() => setForm({ ...form, kind: k })}
                  />{' '}
                  {k}
                </label>
              ))}
            </div>
            {form.kind === 'rrule' && (
              <>
                <Field
                  {...f}
                  id="rule"
                  api="schedule.rule"
                  label="Recurrence rule (RFC 5545)"
                  hint="e.g. FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0"
                />
                <Field
                  {...f}
                  id="dtstart"
                  api="schedule.dtstart"
                  label="DTSTART (local wall time in the zone)"
                  hint="e.g. 2026-01-01T00:00:00"
                />
                <Field
                  {...f}
                  id="exdates"
                  api="schedule.exdates"
                  label="Excluded wall times (optional)"
                  hint="comma-separated, e.g. 2026-12-25T17:00:00"
                />
              </>
            )}
            {(form.kind === 'cron' || form.kind === 'rrule') && (
              <>
                {form.kind === 'cron' && (
                  <Field
                    {...f}
                    id="expression"
                    api="schedule.expression"
                    label="Cron expression"
                    hint="minute hour day-of-month month day-of-week, e.g. 0 9 * * MON-FRI"
                  />
                )}
                <Field {...f} id="time_zone" api="schedule.time_zone" label="Time zone" list="zones" />
                <datalist id="zones">
                  {ZONES.map((z) => (
                    <option key={z} value={z} />
                  ))}
                </datalist>
                <div class="row">
                  <Field
                    {...f}
                    id="dst_gap"
                    api="schedule.dst_gap"
                    label="Spring-forward gap"
                    options={['AUTO', 'SHIFT', 'SKIP']}
                  />
                  <Field
                    {...f}
                    id="dst_repeat"
                    api="schedule.dst_repeat"
                    label="Fall-back repeat"
                    options={['AUTO', 'FIRST', 'LAST', 'BOTH']}
                  />
                </div>
              </>
            )}
            {form.kind === 'interval' && (
              <>
                <Field
                  {...f}
                  id="every_ms"
                  api="schedule.every_ms"
                  label="Every (milliseconds)"
                  hint="60000 = every minute"
                />
                <Field {...f} id="anchor" api="schedule.anchor" label="Anchor (optional, ISO-8601)" />
              </>
            )}
            {form.kind === 'once' && (
              <Field
                {...f}
                id="at"
                api="schedule.at"
                label="At (ISO-8601, UTC)"
                hint="e.g. 2026-12-01T09:00:00Z"
              />
            )}
            {form.kind !== 'once' && (
              <div class="row">
                <Field {...f} id="start_at" api="schedule.start_at" label="Start at (optional)" />
                <Field {...f} id="end_at" api="schedule.end_at" label="End at (optional)" />
                <Field {...f} id="max_fires" api="schedule.max_fires" label="Max fires (optional)" />
              </div>
            )}
            {errors
              .filter((v) => v.field === 'schedule' || v.field === 'schedule.kind')
              .map((v) => (
                <p class="field-error" key={v.field}>
                  {v.field}: {v.message}
                </p>
              ))}
          </fieldset>
          <fieldset>
            <legend>Target</legend>
            <Field {...f} id="target_type" api="target.type" label="Type" options={['webhook', 'kafka']} />
            {form.target_type === 'webhook' ? (
              <>
                <Field {...f} id="url" api="target.url" label="URL" type="url" />
                <div class="row">
                  <Field
                    {...f}
                    id="method"
                    api="target.method"
                    label="Method"
                    options={['POST', 'PUT', 'PATCH', 'GET', 'DELETE']}
                  />
                  <Field
                    {...f}
                    id="timeout_ms"
                    api="target.timeout_ms"
                    label="Timeout (ms)"
                    hint="empty: 10000"
                  />
                </div>
              </>
            ) : (
              <>
                <Field {...f} id="topic" api="target.topic" label="Topic" />
                <Field {...f} id="key" api="target.key" label="Key (optional)" />
              </>
            )}
            <Field
              {...f}
              id="headers"
              api="target.headers"
              label="Headers (JSON object, optional)"
              textarea
            />
          </fieldset>
          <fieldset>
            <legend>Payload</legend>
            <Field {...f} id="payload" api="payload" label="Payload (JSON)" textarea />
          </fieldset>
          <fieldset>
            <legend>Policies</legend>
            <div class="row">
              <Field
                {...f}
                id="misfire"
                api="policies.misfire"
                label="Misfire"
                options={['FIRE_ONCE', 'FIRE_ALL', 'SKIP']}
              />
              <Field
                {...f}
                id="overlap"
                api="policies.overlap"
                label="Overlap"
                options={['ALLOW', 'FORBID']}
              />
              <Field {...f} id="jitter_ms" api="policies.jitter_ms" label="Jitter (ms)" />
            </div>
            <div class="row">
              <Field
                {...f}
                id="tolerance_ms"
                api="policies.tolerance_ms"
                label="SLO tolerance (ms)"
                hint="started later than this after its time: LATE; empty: the default"
              />
              <Field
                {...f}
                id="slo_metrics"
                api="policies.slo_metrics"
                label="Per-job SLO metrics"
                options={['off', 'on']}
              />
              <Field
                {...f}
                id="result_events"
                api="policies.result_events"
                label="Result events"
                options={['ALL', 'FAILURES', 'NONE']}
                hint="what goes to the fire-results topic; FAILURES: all but SUCCEEDED"
              />
            </div>
            <div class="row">
              <Field
                {...f}
                id="max_attempts"
                api="policies.retry.max_attempts"
                label="Retry: max attempts"
                hint="empty: the default"
              />
              <Field
                {...f}
                id="initial_backoff_ms"
                api="policies.retry.initial_backoff_ms"
                label="Retry: first backoff (ms)"
              />
            </div>
          </fieldset>
          <div class="actions">
            <button type="submit" class="primary" disabled={busy}>
              {creating ? 'Create job' : 'Save changes'}
            </button>
            <a class="button" href={creating ? '#/jobs' : jobHref(jobId)}>
              Cancel
            </a>
          </div>
        </form>
        <Preview schedule={scheduleOf(form)} dstRepeat={form.dst_repeat} />
      </div>
    </section>
  );
}
