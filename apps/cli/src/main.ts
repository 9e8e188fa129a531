#!/usr/bin/env node
/**
 * `tickwork`: the command-line client of the gRPC admin API (tickwork.admin.v1.SchedulerAdmin).
 * Human tables by default, `--json` for scripts. Server, token and TLS from flags or
 * TICKWORK_SERVER / TICKWORK_TOKEN / TICKWORK_CA_FILE.
 */
import { readFileSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { Command, Option } from 'commander';
import { parse as parseYaml } from 'yaml';
import { AdminClient, CliError, type ClientOptions } from './client';
import { calendarToProtoRequest, jobToProtoRequest, scheduleToProtoRequest } from './job-file';
import { registerBackfillCommands } from './backfill-commands';
import {
  printBulkAction,
  printCalendars,
  printCluster,
  printDeadLetters,
  printLateness,
  printWhoAmI,
  printFires,
  printEditPreview,
  printJob,
  printJobs,
  printOccurrences,
  printPreview,
  printRun,
  printRuns,
  type Out,
} from './render';

type Msg = Record<string, unknown>;

interface GlobalOptions {
  server: string;
  token?: string;
  tls?: boolean;
  ca?: string;
  json?: boolean;
  timeout: string;
}

const program = new Command()
  .name('tickwork')
  .description("Tickwork's admin CLI, over the gRPC API")
  .addOption(
    new Option('-s, --server <host:port>', 'gRPC address of the API')
      .env('TICKWORK_SERVER')
      .default('127.0.0.1:50051'),
  )
  .addOption(new Option('-t, --token <token>', 'bearer token').env('TICKWORK_TOKEN'))
  .addOption(new Option('--tls', 'connect with TLS (system roots, or --ca)').env('TICKWORK_TLS'))
  .addOption(
    new Option('--ca <file>', 'PEM file of the CA that signed the server certificate (implies --tls)').env(
      'TICKWORK_CA_FILE',
    ),
  )
  .option('--json', 'print JSON instead of tables')
  .option('--timeout <ms>', 'deadline of each call in milliseconds', '10000')
  .showHelpAfterError();

function clientOptions(): ClientOptions {
  const o = program.opts<GlobalOptions>();
  const timeoutMs = Number(o.timeout);
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0)
    throw new CliError('--timeout must be a positive number of milliseconds');
  return { server: o.server, token: o.token, tls: Boolean(o.tls) || Boolean(o.ca), caFile: o.ca, timeoutMs };
}

function out(): Out {
  return {
    json: Boolean(program.opts<GlobalOptions>().json),
    write: (s) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`),
  };
}

/**
 * A bulk action over a large selection takes a while (about 5,000 jobs a second): unless --timeout
 * is given, its deadline is 10 minutes instead of the default 10 seconds.
 */
const BULK_DEFAULT_TIMEOUT_MS = 600_000;

/** Runs one RPC with a fresh client and closes it. */
async function call(method: string, request: Msg): Promise<Msg> {
  const opts = clientOptions();
  const defaultTimeout = program.getOptionValueSource('timeout') === 'default';
  const client = new AdminClient(
    method === 'BulkAction' && defaultTimeout ? { ...opts, timeoutMs: BULK_DEFAULT_TIMEOUT_MS } : opts,
  );
  try {
    return await client.call(method, request);
  } finally {
    client.close();
  }
}

/** A YAML or JSON file; relative paths are from where the user ran the command (npm run sets INIT_CWD). */
function readDocument(path: string): unknown {
  const text =
    path === '-'
      ? readFileSync(0, 'utf8')
      : readFileSync(resolvePath(process.env.INIT_CWD ?? process.cwd(), path), 'utf8');
  try {
    return parseYaml(text) as unknown;
  } catch (e) {
    throw new CliError(`${path} is not YAML or JSON: ${(e as Error).message}`);
  }
}

function pageOptions(cmd: Command): Command {
  return cmd
    .option('--page-size <n>', 'items per page (default 50)')
    .option('--page-token <token>', 'continue after a previous page')
    .option('--all', 'follow every page');
}

/** Calls a paged List RPC once, or until the last page with --all. */
async function paged(
  method: string,
  request: Msg,
  opts: { pageSize?: string; pageToken?: string; all?: boolean },
  field: string,
): Promise<Msg> {
  const items: unknown[] = [];
  let token = opts.pageToken ?? '';
  for (;;) {
    const res = await call(method, {
      ...request,
      page_size: opts.pageSize ? Number(opts.pageSize) : 0,
      page_token: token,
    });
    items.push(...((res[field] as unknown[] | undefined) ?? []));
    token = (res.next_page_token as string | undefined) ?? '';
    if (!opts.all || !token) return { [field]: items, next_page_token: token };
  }
}

program
  .command('create')
  .description('create a job from a YAML or JSON file (the REST body format; - for stdin)')
  .requiredOption('-f, --file <path>', 'job definition file')
  .option('--calendar <name...>', "business calendars the job's occurrences go through (policies.calendars)")
  .option(
    '--calendar-rule <rule>',
    'on a closed day: SKIP, NEXT_BUSINESS_DAY, PREVIOUS_BUSINESS_DAY or ONLY_CLOSED_DAYS (policies.calendar_rule)',
  )
  .action(async (o: { file: string; calendar?: string[]; calendarRule?: string }) => {
    const job = jobToProtoRequest(readDocument(o.file));
    if (o.calendar || o.calendarRule) {
      const policies = (job.policies ?? {}) as Msg;
      job.policies = {
        ...policies,
        ...(o.calendar ? { calendars: o.calendar } : {}),
        ...(o.calendarRule ? { calendar_rule: `CALENDAR_RULE_${o.calendarRule.toUpperCase()}` } : {}),
      };
    }
    printJob(out(), await call('CreateJob', { job }));
  });

program
  .command('get')
  .description('show a job and its last run')
  .argument('<job_id>')
  .action(async (jobId: string) => printJob(out(), await call('GetJob', { job_id: jobId })));

pageOptions(
  program
    .command('list')
    .description('list jobs')
    .option('--tenant <id>', 'only this tenant (admins)')
    .option('--status <status>', 'SCHEDULED, PAUSED or COMPLETED')
    .option('-l, --label <key=value...>', 'only jobs with these labels'),
).action(
  async (o: {
    tenant?: string;
    status?: string;
    label?: string[];
    pageSize?: string;
    pageToken?: string;
    all?: boolean;
  }) => {
    const labels: Record<string, string> = {};
    for (const l of o.label ?? []) {
      const at = l.indexOf('=');
      if (at <= 0) throw new CliError(`--label ${l}: expected key=value`);
      labels[l.slice(0, at)] = l.slice(at + 1);
    }
    const status = o.status ? `JOB_STATUS_${o.status.toUpperCase()}` : 'JOB_STATUS_UNSPECIFIED';
    printJobs(out(), await paged('ListJobs', { tenant_id: o.tenant ?? '', status, labels }, o, 'jobs'));
  },
);

program
  .command('update')
  .description('replace fields of a job from a YAML or JSON file (the fields present are replaced)')
  .argument('<job_id>')
  .requiredOption(
    '-f, --file <path>',
    'file with the fields to replace: schedule, target, payload, policies, labels',
  )
  .option('--etag <etag>', 'only if the job is still at this etag')
  .option('--dry-run', 'change nothing: print what the update would do to the next occurrences')
  .option('-n, --count <n>', 'with --dry-run: occurrences compared per side (1-100)', '10')
  .action(async (jobId: string, o: { file: string; etag?: string; dryRun?: boolean; count: string }) => {
    const doc = readDocument(o.file);
    if (!doc || typeof doc !== 'object' || Array.isArray(doc))
      throw new CliError(`${o.file} must hold a mapping`);
    const paths = Object.keys(doc);
    const job = jobToProtoRequest(doc);
    const request = { job: { ...job, job_id: jobId }, update_mask: { paths }, etag: o.etag ?? '' };
    if (!o.dryRun) return printJob(out(), await call('UpdateJob', request));
    const count = Number(o.count);
    if (!Number.isInteger(count) || count < 1 || count > 100)
      throw new CliError('--count must be an integer from 1 to 100');
    printEditPreview(out(), await call('UpdateJob', { ...request, dry_run: true, dry_run_count: count }));
  });

for (const [name, rpc, what] of [
  ['pause', 'PauseJob', 'stop claiming a job'],
  ['resume', 'ResumeJob', 'claim a paused job again'],
] as const) {
  program
    .command(name)
    .description(what)
    .argument('<job_id>')
    .action(async (jobId: string) => printJob(out(), await call(rpc, { job_id: jobId })));
}

program
  .command('delete')
  .description('delete a job')
  .argument('<job_id>')
  .option('--etag <etag>', 'only if the job is still at this etag')
  .action(async (jobId: string, o: { etag?: string }) => {
    await call('DeleteJob', { job_id: jobId, etag: o.etag ?? '' });
    const w = out();
    w.write(w.json ? JSON.stringify({ deleted: jobId }) : `deleted ${jobId}`);
  });

program
  .command('trigger')
  .description('fire a job now, once, outside its schedule')
  .argument('<job_id>')
  .action(async (jobId: string) =>
    printFires(out(), 'triggered', await call('TriggerJob', { job_id: jobId })),
  );

pageOptions(program.command('runs').description("a job's runs, newest first").argument('<job_id>')).action(
  async (jobId: string, o: { pageSize?: string; pageToken?: string; all?: boolean }) =>
    printRuns(out(), await paged('ListRuns', { job_id: jobId }, o, 'runs')),
);

program
  .command('run')
  .description('one run of a job')
  .argument('<job_id>')
  .argument('<fence_token>')
  .action(async (jobId: string, fence: string) =>
    printRun(out(), await call('GetRun', { job_id: jobId, fence_token: Number(fence) })),
  );

pageOptions(
  program
    .command('occurrences')
    .description("a job's occurrence ledger: fired, skipped, coalesced, with reasons")
    .argument('<job_id>'),
).action(async (jobId: string, o: { pageSize?: string; pageToken?: string; all?: boolean }) =>
  printOccurrences(out(), await paged('ListOccurrences', { job_id: jobId }, o, 'occurrences')),
);

program
  .command('preview')
  .description('the next fire times of a schedule, without creating a job')
  .option('-f, --file <path>', 'a schedule, or a job definition with one (YAML or JSON)')
  .option('--cron <expression>', 'a cron expression')
  .option('--rrule <rule>', 'an RFC 5545 recurrence rule, e.g. FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0')
  .option('--dtstart <local>', "the rule's DTSTART, a local wall time in --tz, e.g. 2026-01-01T00:00:00")
  .option('--exdate <local...>', 'local wall times the rule skips')
  .option('--tz <zone>', 'IANA time zone for --cron or --rrule', 'UTC')
  .option('--every <ms>', 'an interval in milliseconds')
  .option('-n, --count <n>', 'how many fire times', '10')
  .option('--from <iso>', 'start from this instant (default now)')
  .option('--job <job_id>', 'the job the preview is for: places H tokens and herd-window slots')
  .option('--spread <ms>', "a herd window (policies.spread_ms): show each occurrence's slot")
  .option('--calendar <name...>', 'business calendars to show each occurrence through (moved, skipped)')
  .option(
    '--calendar-rule <rule>',
    'SKIP (default), NEXT_BUSINESS_DAY, PREVIOUS_BUSINESS_DAY or ONLY_CLOSED_DAYS',
  )
  .action(
    async (o: {
      file?: string;
      cron?: string;
      rrule?: string;
      dtstart?: string;
      exdate?: string[];
      tz: string;
      every?: string;
      count: string;
      from?: string;
      job?: string;
      spread?: string;
      calendar?: string[];
      calendarRule?: string;
    }) => {
      let schedule: unknown;
      if (o.file) {
        const doc = readDocument(o.file) as Record<string, unknown> | null;
        schedule = doc && typeof doc === 'object' && 'schedule' in doc ? doc.schedule : doc;
      } else if (o.cron) schedule = { kind: 'cron', expression: o.cron, time_zone: o.tz };
      else if (o.rrule)
        schedule = {
          kind: 'rrule',
          rule: o.rrule,
          dtstart: o.dtstart,
          time_zone: o.tz,
          ...(o.exdate ? { exdates: o.exdate } : {}),
        };
      else if (o.every) schedule = { kind: 'interval', every_ms: Number(o.every) };
      else throw new CliError('give --file, --cron, --rrule (with --dtstart) or --every');
      const from = o.from ? new Date(o.from) : undefined;
      if (from && Number.isNaN(from.getTime())) throw new CliError('--from must be an ISO-8601 instant');
      const request: Msg = { schedule: scheduleToProtoRequest(schedule), count: Number(o.count) };
      if (o.job) request.job_id = o.job;
      if (o.spread !== undefined) {
        if (!/^\d+$/.test(o.spread)) throw new CliError('--spread must be a whole number of milliseconds');
        request.spread_ms = Number(o.spread);
      }
      if (from)
        request.from = { seconds: Math.floor(from.getTime() / 1000), nanos: (from.getTime() % 1000) * 1e6 };
      if (o.calendar) request.calendars = o.calendar;
      if (o.calendarRule) request.calendar_rule = `CALENDAR_RULE_${o.calendarRule.toUpperCase()}`;
      printPreview(out(), await call('PreviewSchedule', request));
    },
  );

const calendar = program
  .command('calendar')
  .description('business calendars: closed weekdays, holidays, closed and open dates');
const sharedOption = (c: Command) =>
  c
    .option('--shared', 'the shared calendar (written by admins only)')
    .option('--tenant <id>', "admins: the tenant's calendar");
sharedOption(
  calendar
    .command('create')
    .description(
      'create a calendar from a YAML or JSON file (the REST body: name, closed_weekdays, holidays, holiday_source, …)',
    )
    .requiredOption('-f, --file <path>', 'calendar file'),
).action(async (o: { file: string; shared?: boolean; tenant?: string }) =>
  printCalendars(
    out(),
    await call('CreateCalendar', {
      calendar: {
        ...calendarToProtoRequest(readDocument(o.file)),
        ...(o.tenant ? { tenant_id: o.tenant } : {}),
      },
      shared: Boolean(o.shared),
    }),
  ),
);
sharedOption(calendar.command('get').description('show a calendar').argument('<name>')).action(
  async (name: string, o: { shared?: boolean; tenant?: string }) =>
    printCalendars(
      out(),
      await call('GetCalendar', { name, shared: Boolean(o.shared), tenant_id: o.tenant ?? '' }),
    ),
);
pageOptions(calendar.command('list').description('the calendars you may see').option('--tenant <id>')).action(
  async (o: { tenant?: string; pageSize?: string; pageToken?: string; all?: boolean }) =>
    printCalendars(out(), await paged('ListCalendars', { tenant_id: o.tenant ?? '' }, o, 'calendars')),
);
sharedOption(
  calendar
    .command('update')
    .description(
      "replace a calendar's definition from a file (a new version); the jobs using it are re-planned",
    )
    .argument('<name>')
    .requiredOption('-f, --file <path>', 'calendar file')
    .option('--etag <etag>', 'only if the calendar is still at this etag (v<version>)'),
).action(async (name: string, o: { file: string; etag?: string; shared?: boolean; tenant?: string }) =>
  printCalendars(
    out(),
    await call('UpdateCalendar', {
      calendar: { ...calendarToProtoRequest(readDocument(o.file)), name },
      etag: o.etag ?? '',
      shared: Boolean(o.shared),
      tenant_id: o.tenant ?? '',
    }),
  ),
);
sharedOption(
  calendar
    .command('delete')
    .description('delete a calendar no job uses')
    .argument('<name>')
    .option('--etag <etag>', 'only if the calendar is still at this etag'),
).action(async (name: string, o: { etag?: string; shared?: boolean; tenant?: string }) => {
  await call('DeleteCalendar', {
    name,
    etag: o.etag ?? '',
    shared: Boolean(o.shared),
    tenant_id: o.tenant ?? '',
  });
  const w = out();
  w.write(w.json ? JSON.stringify({ deleted: name }) : `deleted calendar ${name}`);
});

const dlq = program.command('dlq').description('dead letters: fires that exhausted their retries');
pageOptions(
  dlq
    .command('list')
    .description('list dead letters, newest first')
    .option('--tenant <id>')
    .option('--job <job_id>'),
).action(async (o: { tenant?: string; job?: string; pageSize?: string; pageToken?: string; all?: boolean }) =>
  printDeadLetters(
    out(),
    await paged('ListDeadLetters', { tenant_id: o.tenant ?? '', job_id: o.job ?? '' }, o, 'dead_letters'),
  ),
);
dlq
  .command('replay')
  .description('re-enqueue a dead-lettered fire as a new fire (once per dead letter)')
  .argument('<fire_id>', 'job_id:fence_token')
  .action(async (fireId: string) =>
    printFires(out(), 'replayed', await call('ReplayDeadLetter', { fire_id: fireId })),
  );

program
  .command('bulk')
  .description('pause, resume, trigger or delete every job matching a label selector, in one call')
  .argument('<action>', 'pause, resume, trigger or delete')
  .requiredOption(
    '-l, --selector <selector>',
    'label selector, e.g. team=payments,env=prod (key!=value excludes)',
  )
  .option('--tenant <id>', 'admins: the tenant to act in (default: every tenant)')
  .option('--dry-run', 'only count the matching jobs and show the first ids')
  .option(
    '--until <instant>',
    'pause: resume by itself at this instant (RFC 3339, e.g. 2026-12-07T09:00:00Z)',
  )
  .addOption(
    new Option(
      '--missed <policy>',
      "resume (or pause --until): occurrences missed while paused (default: each job's misfire policy)",
    ).choices(['SKIP', 'FIRE_ONCE', 'FIRE_ALL']),
  )
  .option('--catch-up-window <ms>', 'with --missed: only occurrences this recent may fire')
  .option('--catch-up-limit <n>', 'with --missed FIRE_ALL: at most this many fire per job')
  .action(
    async (
      action: string,
      o: {
        selector: string;
        tenant?: string;
        dryRun?: boolean;
        until?: string;
        missed?: string;
        catchUpWindow?: string;
        catchUpLimit?: string;
      },
    ) => {
      const kind = action.toUpperCase();
      if (!['PAUSE', 'RESUME', 'TRIGGER', 'DELETE'].includes(kind))
        throw new CliError(`bulk ${action}: expected pause, resume, trigger or delete`);
      let until: Msg | undefined;
      if (o.until !== undefined) {
        const ms = Date.parse(o.until);
        if (Number.isNaN(ms)) throw new CliError(`--until ${o.until}: expected an RFC 3339 instant`);
        until = { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 };
      }
      const int = (v: string | undefined, name: string): number => {
        if (v === undefined) return 0;
        if (!/^\d{1,15}$/.test(v)) throw new CliError(`${name} ${v}: expected a positive integer`);
        return Number(v);
      };
      printBulkAction(
        out(),
        await call('BulkAction', {
          action: `BULK_ACTION_KIND_${kind}`,
          label_selector: o.selector,
          tenant_id: o.tenant ?? '',
          dry_run: Boolean(o.dryRun),
          ...(until ? { until } : {}),
          missed: o.missed ? `MISSED_OCCURRENCES_${o.missed}` : 'MISSED_OCCURRENCES_UNSPECIFIED',
          catch_up_window_ms: int(o.catchUpWindow, '--catch-up-window'),
          catch_up_limit: int(o.catchUpLimit, '--catch-up-limit'),
        }),
      );
    },
  );

program
  .command('whoami')
  .description('who the server says this token is: role, tenant, auth mode')
  .action(async () => printWhoAmI(out(), await call('WhoAmI', {})));
program
  .command('cluster')
  .description('admins: shard owners, epochs, leases, backlog and outbox; consumer lag; runs in flight')
  .action(async () => printCluster(out(), await call('GetCluster', {})));
program
  .command('lateness')
  .description('lateness p50/p99 and counts over the last hour or day, from the run ledger')
  .addOption(new Option('-w, --window <window>', 'hour or day').choices(['hour', 'day']).default('hour'))
  .option('--tenant <id>', 'admins: one tenant (default: all)')
  .option('--job <job_id>', 'one job')
  .action(async (o: { window: string; tenant?: string; job?: string }) =>
    printLateness(
      out(),
      await call('GetLateness', { window: o.window, tenant_id: o.tenant ?? '', job_id: o.job ?? '' }),
    ),
  );

program
  .command('token')
  .description('make a bearer token and the sha256 line for the tenants file')
  .argument('<name>', 'a name for the token (shown in audit events)')
  .option('--tenant <id>', 'tenant of the token (role tenant)')
  .option('--admin', 'an admin token (every tenant)')
  .action(async (name: string, o: { tenant?: string; admin?: boolean }) => {
    const { createHash, randomBytes } = await import('node:crypto');
    if (!o.admin && !o.tenant) throw new CliError('give --tenant <id> or --admin');
    const token = `tw_${randomBytes(32).toString('base64url')}`;
    const sha256 = createHash('sha256').update(token).digest('hex');
    const entry = {
      name,
      sha256,
      role: o.admin ? 'admin' : 'tenant',
      ...(o.admin ? {} : { tenant: o.tenant }),
    };
    const w = out();
    if (w.json) w.write(JSON.stringify({ token, entry }));
    else
      w.write(
        `token (give to the client; it is not stored):\n  ${token}\ntokens entry for the tenants file:\n  - ${JSON.stringify(entry)}`,
      );
  });

registerBackfillCommands(program, { call, out });

program.parseAsync(process.argv).catch((e: unknown) => {
  if (e instanceof CliError) {
    process.stderr.write(`tickwork: ${e.message}\n`);
    for (const v of e.violations) process.stderr.write(`  ${v.field}: ${v.message}\n`);
    process.exit(e.exitCode);
  }
  process.stderr.write(`tickwork: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
