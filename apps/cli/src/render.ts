/** Output of the CLI: aligned tables for people, the response messages as JSON with --json. */
type Msg = Record<string, unknown>;

export interface Out {
  readonly json: boolean;
  write(s: string): void;
}

/** Timestamp message → ISO string, or '-' when unset. */
export function tsText(v: unknown): string {
  if (!v || typeof v !== 'object') return '-';
  const t = v as { seconds?: number; nanos?: number };
  return new Date((t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6)).toISOString();
}

/** A JSON rendering with Timestamps as ISO strings and google.protobuf.Value as plain JSON. */
export function plain(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plain);
  if (!v || typeof v !== 'object') return v;
  const m = v as Msg;
  const keys = Object.keys(m);
  if (keys.every((k) => k === 'seconds' || k === 'nanos') && keys.includes('seconds')) return tsText(m);
  if (typeof m.kind === 'string' && m.kind.endsWith('Value') && keys.length === 2) return valueJson(m);
  return Object.fromEntries(
    Object.entries(m)
      .filter(([k]) => k !== 'kind')
      .map(([k, x]) => [k, plain(x)]),
  );
}

function valueJson(m: Msg): unknown {
  switch (m.kind) {
    case 'structValue':
      return Object.fromEntries(
        Object.entries(((m.structValue as Msg).fields ?? {}) as Msg).map(([k, v]) => [
          k,
          valueJson(v as Msg),
        ]),
      );
    case 'listValue':
      return (((m.listValue as Msg).values ?? []) as Msg[]).map(valueJson);
    case 'nullValue':
      return null;
    default:
      return m[m.kind as string];
  }
}

const strip = (v: unknown, prefix: string): string =>
  typeof v === 'string' && !v.endsWith('_UNSPECIFIED') ? v.replace(prefix, '') : '-';

function table(out: Out, headers: string[], rows: string[][], footer?: string): void {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  out.write([line(headers), ...rows.map(line), ...(footer ? [footer] : [])].join('\n'));
}

function scheduleText(s: unknown): string {
  const m = (s ?? {}) as Msg;
  if (m.once) return `once at ${tsText((m.once as Msg).at)}`;
  if (m.interval) return `every ${String((m.interval as Msg).every_ms)} ms`;
  if (m.cron) {
    const c = m.cron as Msg;
    return `cron "${String(c.expression)}" ${String(c.time_zone ?? 'UTC')}`;
  }
  if (m.rrule) {
    const r = m.rrule as Msg;
    return `rrule "${String(r.rule)}" from ${String(r.dtstart)} ${String(r.time_zone || 'UTC')}`;
  }
  return '-';
}

function targetText(t: unknown): string {
  const m = (t ?? {}) as Msg;
  if (m.webhook)
    return `${strip((m.webhook as Msg).method, 'HTTP_METHOD_')} ${String((m.webhook as Msg).url)}`;
  if (m.kafka) return `kafka ${String((m.kafka as Msg).topic)}`;
  return '-';
}

const more = (res: Msg): string | undefined =>
  res.next_page_token ? `next page: --page-token ${String(res.next_page_token)}` : undefined;

/** One job, as key: value lines. */
export function printJob(out: Out, job: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(job), null, 2));
  const last = job.last_run as Msg | undefined;
  const labels = Object.entries((job.labels ?? {}) as Record<string, string>).map(([k, v]) => `${k}=${v}`);
  const rows: [string, string][] = [
    ['job_id', String(job.job_id)],
    ['tenant', String(job.tenant_id)],
    ['status', strip(job.status, 'JOB_STATUS_')],
    ['schedule', scheduleText(job.schedule)],
    ['target', targetText(job.target)],
    ['next_run_at', tsText(job.next_run_at)],
    ['fires', String(job.fires_count ?? 0)],
    ['fence_token', String(job.fence_token ?? 0)],
    ['etag', String(job.etag ?? '')],
    ['labels', labels.join(', ') || '-'],
  ];
  if (last)
    rows.push([
      'last_run',
      `${strip(last.status, 'RUN_STATUS_')} #${String(last.fence_token)} at ${tsText(last.finished_at ?? last.started_at)}`,
    ]);
  out.write(rows.map(([k, v]) => `${k.padEnd(12)}${v}`).join('\n'));
}

/** A page of jobs. */
export function printJobs(out: Out, res: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(res), null, 2));
  const jobs = (res.jobs ?? []) as Msg[];
  table(
    out,
    ['JOB_ID', 'TENANT', 'STATUS', 'SCHEDULE', 'NEXT_RUN_AT', 'FIRES'],
    jobs.map((j) => [
      String(j.job_id),
      String(j.tenant_id),
      strip(j.status, 'JOB_STATUS_'),
      scheduleText(j.schedule),
      tsText(j.next_run_at),
      String(j.fires_count ?? 0),
    ]),
    more(res),
  );
}

const runRow = (r: Msg): string[] => [
  String(r.fence_token),
  strip(r.status, 'RUN_STATUS_'),
  String(r.attempt ?? '-'),
  tsText(r.scheduled_for),
  tsText(r.finished_at),
  r.http_status === undefined ? '-' : String(r.http_status),
  r.job_version === undefined ? '-' : `v${String(r.job_version)}`,
  String(r.trace_id || '-'),
  String(r.error || '-'),
];
const RUN_HEADERS = [
  'FENCE',
  'STATUS',
  'ATTEMPT',
  'SCHEDULED_FOR',
  'FINISHED_AT',
  'HTTP',
  'VERSION',
  'TRACE_ID',
  'ERROR',
];

/** Runs as a table; with herd-window columns (nominal time, slot offset) when any run has a slot. */
function runTable(out: Out, runs: readonly Msg[], footer?: string): void {
  if (!runs.some((r) => Number(r.spread_offset_ms ?? 0) > 0)) {
    table(out, RUN_HEADERS, runs.map(runRow), footer);
    return;
  }
  const [fence, ...rest] = RUN_HEADERS;
  table(
    out,
    [fence!, 'NOMINAL_TIME', 'SLOT_OFFSET_MS', ...rest],
    runs.map((r) => {
      const [f, ...cells] = runRow(r);
      return [f!, tsText(r.nominal_time), String(r.spread_offset_ms ?? 0), ...cells];
    }),
    footer,
  );
}

/** A page of runs. */
export function printRuns(out: Out, res: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(res), null, 2));
  runTable(out, (res.runs ?? []) as Msg[], more(res));
}

/** One run. */
export function printRun(out: Out, run: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(run), null, 2));
  runTable(out, [run]);
}

/** A fired occurrence's SLO mark: ` LATE by 12.3s`, ` MISSED`, or nothing when on time. */
function sloText(o: Msg): string {
  if (o.reason !== 'LATE' && o.reason !== 'MISSED') return '';
  const late = typeof o.lateness_ms === 'number' ? ` by ${(o.lateness_ms / 1000).toFixed(1)}s` : '';
  return ` ${o.reason}${late}`;
}

/** A page of the occurrence ledger. */
export function printOccurrences(out: Out, res: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(res), null, 2));
  table(
    out,
    ['NOMINAL_TIME', 'OUTCOME', 'COUNT', 'VERSION', 'DETAIL'],
    ((res.occurrences ?? []) as Msg[]).map((o) => {
      const outcome = strip(o.outcome, 'OCCURRENCE_OUTCOME_');
      const detail =
        outcome === 'FIRED'
          ? `fence ${String(o.fence_token)} ${strip(o.trigger, 'FIRE_TRIGGER_')} run ${strip(o.run_status, 'RUN_STATUS_')}${o.enqueued_at ? '' : ' (in outbox)'}${Number(o.spread_offset_ms ?? 0) > 0 ? ` slot ${tsText(o.scheduled_for)} (+${String(o.spread_offset_ms)} ms)` : ''}${sloText(o)}`
          : `${String(o.reason)} until ${tsText(o.last_nominal_time)}`;
      // CALENDAR_SHIFT / CALENDAR_SKIP: which calendar, at which version, moved or closed it.
      const c = o.calendar as Msg | undefined;
      const calendar = c
        ? ` ${String(c.reason)} ${String(c.name)}@v${String(c.version)}${c.reason === 'CALENDAR_SHIFT' ? ` (${shiftText(c.shift_ms)})` : ''}`
        : '';
      const version = o.job_version === undefined ? '-' : `v${String(o.job_version)}`;
      return [tsText(o.nominal_time), outcome, String(o.occurrences ?? 1), version, detail + calendar];
    }),
    more(res),
  );
}

/** A page of dead letters. */
export function printDeadLetters(out: Out, res: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(res), null, 2));
  table(
    out,
    ['FIRE_ID', 'TENANT', 'ATTEMPT', 'DEAD_AT', 'HTTP', 'ERROR', 'REPLAYED_AS'],
    ((res.dead_letters ?? []) as Msg[]).map((d) => [
      String(d.fire_id),
      String(d.tenant_id),
      String(d.attempt ?? '-'),
      tsText(d.dead_lettered_at),
      d.http_status === undefined ? '-' : String(d.http_status),
      String(d.error || '-'),
      String(d.replay_fire_id || '-'),
    ]),
    more(res),
  );
}

/** A fire made by trigger or replay. */
export function printFires(out: Out, verb: string, fire: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(fire), null, 2));
  out.write(
    `${verb}: fire ${String(fire.fire_id)} (fence token ${String(fire.fence_token)}) scheduled for ${tsText(fire.scheduled_for)}`,
  );
}

/** Previewed fire times. */
export function printPreview(out: Out, res: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(res), null, 2));
  const fires = (res.fires ?? []) as Msg[];
  if (res.resolved_expression) out.write(`H resolves to: ${String(res.resolved_expression)}`);
  // With a herd window: the nominal time (UTC, LOCAL), then the slot it fires at and its offset.
  const slots = fires.some((f) => f.slot_at);
  // With business calendars: what the calendar did to each occurrence, and why.
  const calendars = fires.some((f) => f.calendar);
  table(
    out,
    [
      ...(slots ? ['#', 'UTC', 'LOCAL', 'SLOT', 'OFFSET_MS'] : ['#', 'UTC', 'LOCAL']),
      ...(calendars ? ['CALENDAR'] : []),
    ],
    fires.map((f, i) => [
      String(i + 1),
      tsText(f.at),
      `${String(f.local_time)} ${String(f.time_zone)}`,
      ...(slots ? [tsText(f.slot_at), String(f.spread_offset_ms ?? 0)] : []),
      ...(calendars ? [calendarText(f.calendar as Msg | undefined)] : []),
    ]),
  );
  if (res.truncated)
    out.write(
      res.truncated_by === 'HORIZON'
        ? '(the preview looks 100 years ahead at most: the schedule goes on; ask again --from the last one)'
        : '(cut short by the preview work budget: ask again --from the last one for more)',
    );
}

/** A calendar's effect on a previewed occurrence: `SHIFT +3d (Christmas Day) xmas@v1`, `SKIP (Saturday) …`, or -. */
function calendarText(c: Msg | undefined): string {
  if (!c) return '-';
  const what = c.reason === 'CALENDAR_SHIFT' ? `SHIFT ${shiftText(c.shift_ms)}` : 'SKIP';
  return `${what} (${String(c.why)}) ${String(c.name)}@v${String(c.version)}`;
}

/** A calendar shift in days and hours, signed: +2d, -1d, +1d23h. */
function shiftText(ms: unknown): string {
  const n = Number(ms ?? 0);
  const abs = Math.abs(n);
  const days = Math.floor(abs / 86_400_000);
  const hours = Math.round((abs % 86_400_000) / 3_600_000);
  return `${n < 0 ? '-' : '+'}${days}d${hours ? `${hours}h` : ''}`;
}

/** One business calendar, or a page of them. */
export function printCalendars(out: Out, res: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(res), null, 2));
  const list = (res.calendars ?? [res.calendar ?? res]) as Msg[];
  table(
    out,
    ['NAME', 'TENANT', 'VERSION', 'CLOSED_WEEKDAYS', 'HOLIDAYS', 'CLOSED', 'OPEN', 'SOURCE'],
    list.map((c) => {
      const source = c.holiday_source as Msg | undefined;
      const hand = (c.holidays as unknown[] | undefined)?.length ?? 0;
      const generated = (c.generated_holidays as unknown[] | undefined)?.length ?? 0;
      return [
        String(c.name),
        c.shared ? '(shared)' : String(c.tenant_id),
        `v${String(c.version)}`,
        ((c.closed_weekdays as Msg | undefined)?.weekdays as string[] | undefined)?.join(',') || '-',
        String(hand + generated),
        String((c.closed_dates as unknown[] | undefined)?.length ?? 0),
        String((c.open_dates as unknown[] | undefined)?.length ?? 0),
        source && source.country
          ? `${String(source.country)}${source.region ? `-${String(source.region)}` : ''} ${((source.years as number[]) ?? []).join(',')} (${String(source.library)} ${String(source.library_version)})`
          : '-',
      ];
    }),
    more(res),
  );
  if (res.replanned_jobs !== undefined) out.write(`re-planned ${String(res.replanned_jobs)} job(s)`);
}

/** Who the server says the caller is. */
export function printWhoAmI(out: Out, res: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(res), null, 2));
  const tenants = (res.known_tenants ?? []) as string[];
  out.write(
    [
      `actor    ${String(res.actor)}`,
      `role     ${String(res.role)}`,
      `tenant   ${String(res.tenant_id || '(all: admin)')}`,
      `auth     ${String(res.auth)}`,
      ...(tenants.length ? [`tenants  ${tenants.join(', ')}`] : []),
    ].join('\n'),
  );
}

const secs = (v: unknown): string => (typeof v === 'number' && v > 0 ? `${v.toFixed(1)}s` : '-');
const msText = (v: unknown): string => (typeof v === 'number' ? `${v.toFixed(0)}ms` : '-');

/** Shards, consumer lag and runs in flight. */
export function printCluster(out: Out, res: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(res), null, 2));
  table(
    out,
    ['SHARD', 'OWNER', 'EPOCH', 'LEASE_EXPIRES', 'DUE', 'OLDEST_DUE', 'OUTBOX', 'OUTBOX_OLDEST'],
    ((res.shards ?? []) as Msg[]).map((s) => [
      String(s.shard ?? 0),
      String(s.owner || '-'),
      String(s.epoch ?? 0),
      tsText(s.lease_expires_at),
      String(s.due ?? 0),
      secs(s.oldest_due_age_seconds),
      String(s.outbox_pending ?? 0),
      secs(s.outbox_oldest_age_seconds),
    ]),
  );
  out.write('');
  table(
    out,
    ['GROUP', 'TOPIC', 'LAG'],
    ((res.consumer_lag ?? []) as Msg[]).map((l) => [
      String(l.group),
      String(l.topic),
      l.lag === undefined ? `unknown (${String(l.error || '?')})` : String(l.lag),
    ]),
  );
  const executors = (res.executors ?? []) as Msg[];
  out.write('');
  if (executors.length === 0) out.write('no run in flight');
  else
    table(
      out,
      ['EXECUTOR', 'RUNNING', 'RETRYING'],
      executors.map((e) => [String(e.owner), String(e.running ?? 0), String(e.retrying ?? 0)]),
    );
}

/** Lateness p50/p99 and counts over a window. */
export function printLateness(out: Out, res: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(res), null, 2));
  const o = (res.overall ?? {}) as Msg;
  out.write(
    `last ${String(res.window)}: fired ${String(res.fired ?? 0)}, skipped ${String(res.skipped ?? 0)}, ` +
      `retried ${String(res.retried ?? 0)}, dead-lettered ${String(res.dead_lettered ?? 0)}; ` +
      `lateness p50 ${msText(o.p50_ms)}, p99 ${msText(o.p99_ms)}${res.truncated ? ' (sampled: busy buckets)' : ''}`,
  );
  out.write('');
  table(
    out,
    ['FROM', 'RUNS', 'P50', 'P99'],
    ((res.buckets ?? []) as Msg[]).map((b) => [
      tsText(b.start),
      String(b.runs ?? 0),
      msText(b.p50_ms),
      msText(b.p99_ms),
    ]),
  );
  const jobs = (res.by_job ?? []) as Msg[];
  if (jobs.length) {
    out.write('');
    table(
      out,
      ['JOB', 'RUNS', 'P50', 'P99'],
      jobs.map((j) => [String(j.key), String(j.runs ?? 0), msText(j.p50_ms), msText(j.p99_ms)]),
    );
  }
}

/** A bulk action's answer: the counts, the first ids, the first failures. */
export function printBulkAction(out: Out, res: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(res), null, 2));
  const action = String(res.action ?? '').replace(/^BULK_ACTION_KIND_/, '');
  const n = (k: string) => String(res[k] ?? 0);
  const lines = [
    res.dry_run
      ? `dry run: ${action} would touch ${n('matched')} job(s)`
      : `${action}: matched ${n('matched')}, changed ${n('changed')}, unchanged ${n('unchanged')}, failed ${n('failed')}`,
    `bulk action ${String(res.bulk_action_id ?? '')}`,
  ];
  const sample = (res.sample_job_ids as string[] | undefined) ?? [];
  if (sample.length > 0)
    lines.push(`jobs: ${sample.join(', ')}${Number(res.matched) > sample.length ? ', …' : ''}`);
  for (const f of (res.failures as Msg[] | undefined) ?? [])
    lines.push(`failed ${String(f.job_id)}: ${String(f.code)} ${String(f.message)}`);
  out.write(lines.join('\n'));
}

/**
 * A dry-run update (UpdateJob dry_run) as a diff of the job's next occurrences: `+` appears, `-`
 * disappears, `~` keeps its nominal time but is claimed at another time, ` ` unchanged; then what
 * the next claim does with occurrences already due, and the fires already claimed ahead.
 */
export function printEditPreview(out: Out, job: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(job), null, 2));
  const p = (job.edit_preview ?? {}) as Msg;
  const version = Number(p.current_version ?? 0);
  const side = (s: unknown) => (s ?? {}) as Msg;
  const before = side(p.before);
  const after = side(p.after);
  const occ = (s: Msg) => (s.occurrences ?? []) as Msg[];
  const key = (o: Msg) => `${tsText(o.nominal_time)}#${String(o.dst_shift_ms ?? 0)}`;
  const until = p.compared_until ? tsText(p.compared_until) : null;
  const within = (o: Msg) => until === null || tsText(o.nominal_time) <= until;
  const lines: string[] = [
    `dry run: nothing was changed. ${String(job.job_id)} is at version ${version}; this update would make it version ${version + 1}.`,
    `schedule after: ${scheduleText(job.schedule)} (status ${strip(before.status, 'JOB_STATUS_')} -> ${strip(after.status, 'JOB_STATUS_')})`,
    p.replanned
      ? 'the timing changes: the schedule restarts now, and occurrences already due are dropped, not caught up'
      : 'the timing is unchanged: the stored next occurrence stays',
    `due now, before: ${dueText(side(before.due))}`,
    `due now, after:  ${dueText(side(after.due))}`,
    '',
    `next occurrences${until ? ` (compared up to ${until})` : ''}:`,
  ];
  const appearing = new Set(((p.appearing ?? []) as Msg[]).map(key));
  const disappearing = new Set(((p.disappearing ?? []) as Msg[]).map(key));
  const moved = new Map(((p.moved ?? []) as Msg[]).map((m) => [key(side(m.after)), side(m.before)]));
  const merged = new Map<string, Msg>();
  // The after side's copy wins: a moved occurrence shows its new claim time.
  for (const o of [...occ(after), ...occ(before)].filter(within))
    if (!merged.has(key(o))) merged.set(key(o), o);
  const rows = [...merged.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [k, o] of rows) {
    const mark = appearing.has(k) ? '+' : disappearing.has(k) ? '-' : moved.has(k) ? '~' : ' ';
    const flags = [
      o.catch_up ? 'catch-up' : '',
      o.claimed ? 'claimed ahead' : '',
      mark === '~' ? `claimed at ${tsText(moved.get(k)!.scheduled_for)} -> ${tsText(o.scheduled_for)}` : '',
      Number(o.dst_shift_ms ?? 0) > 0 ? `DST shift ${String(o.dst_shift_ms)} ms` : '',
    ].filter(Boolean);
    lines.push(`${mark} ${tsText(o.nominal_time)}${flags.length > 0 ? `  (${flags.join(', ')})` : ''}`);
  }
  if (rows.length === 0) lines.push('  (none)');
  lines.push(`${appearing.size} appear, ${disappearing.size} disappear, ${moved.size} move`);
  const claimed = (p.claimed_ahead ?? []) as Msg[];
  if (claimed.length > 0) {
    lines.push('', 'claimed ahead (each goes out as claimed, under its version):');
    for (const c of claimed)
      lines.push(
        `  ${String(c.fire_id)} ${tsText(c.nominal_time)} version ${c.job_version === undefined ? '?' : String(c.job_version)}, ${c.enqueued ? 'on Kafka' : 'in outbox'}; ${c.in_new_schedule ? 'the new schedule has it (not fired again)' : 'not in the new schedule'}`,
      );
  }
  out.write(lines.join('\n'));
}

function dueText(d: Msg): string {
  if (!d.due) return 'nothing due';
  const skipped = ((d.skipped ?? []) as Msg[]).map((s) => `${String(s.occurrences)} ${String(s.reason)}`);
  return [
    `${String(d.catch_up_fires ?? 0)} catch-up fire(s)`,
    d.coalesced ? `${String(d.coalesced)} coalesced` : '',
    skipped.length > 0 ? `skipped: ${skipped.join(', ')}` : '',
    d.on_resume ? '(on resume: the job is paused)' : '',
  ]
    .filter(Boolean)
    .join(', ');
}
