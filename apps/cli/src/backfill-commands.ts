/**
 * `tickwork backfill <job_id> --from --to [--dry-run] [--max-per-second n] [--skip-reasons a,b |
 * --only-never-fired]`, and `tickwork backfill list|get|cancel`: the gRPC CreateBackfill,
 * ListBackfills, GetBackfill and CancelBackfill.
 */
import type { Command } from 'commander';
import { CliError } from './client';
import { plain, tsText, type Out } from './render';

type Msg = Record<string, unknown>;

/** What the backfill commands need from the CLI's main module. */
export interface BackfillCli {
  readonly call: (method: string, request: Msg) => Promise<Msg>;
  readonly out: () => Out;
}

function timestampOf(v: string, flag: string): Msg {
  const ms = Date.parse(v);
  if (Number.isNaN(ms))
    throw new CliError(`${flag} ${v}: expected an RFC 3339 instant, e.g. 2026-06-01T00:00:00Z`);
  return { seconds: Math.floor(ms / 1000), nanos: (((ms % 1000) + 1000) % 1000) * 1e6 };
}

const status = (b: Msg) => String(b.status ?? '').replace(/^BACKFILL_STATUS_/, '');
const n = (v: unknown) => String(v ?? 0);

function occurrenceLines(list: readonly Msg[]): string[] {
  return list.map((o) => {
    const shift = Number(o.dst_shift_ms ?? 0) > 0 ? ` (DST shift ${n(o.dst_shift_ms)} ms)` : '';
    const state = o.state
      ? `  ${String(o.state)}${Number(o.fence_token ?? 0) > 0 ? ` fence ${n(o.fence_token)}` : ''}`
      : '';
    return `  ${tsText(o.nominal_time)}${shift}  ${String(o.reason ?? '')}${state}`;
  });
}

/** A dry run's plan: the occurrences a backfill would fire, one a line. */
export function printBackfillPlan(out: Out, p: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(p), null, 2));
  const excluded = Object.entries((p.excluded ?? {}) as Record<string, unknown>)
    .map(([k, v]) => `${k} ${n(v)}`)
    .join(', ');
  out.write(
    [
      `dry run: would fire ${n(p.planned)} occurrence(s) of ${String(p.job_id)} in [${tsText(p.from)}, ${tsText(p.to)}) at ${n(p.max_per_second)}/s (about ${Math.ceil(Number(p.estimated_duration_ms ?? 0) / 1000)} s)`,
      `already ran: ${n(p.already_ran)}${excluded ? `; left out: ${excluded}` : ''}`,
      ...occurrenceLines((p.occurrences ?? []) as Msg[]),
    ].join('\n'),
  );
}

/** A backfill and its progress (with its occurrences when the message has them). */
export function printBackfill(out: Out, b: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(b), null, 2));
  const lines = [
    `backfill ${String(b.backfill_id)} of ${String(b.job_id)}: ${status(b)}`,
    `window [${tsText(b.from)}, ${tsText(b.to)}) at ${n(b.max_per_second)}/s`,
    `planned ${n(b.planned)}, fired ${n(b.fired)}, found already run ${n(b.found_ran)}, remaining ${n(b.remaining)}`,
    `created by ${String(b.created_by)} at ${tsText(b.created_at)}${b.finished_at ? `, finished ${tsText(b.finished_at)}` : ''}${b.cancelled_by ? `, cancelled by ${String(b.cancelled_by)}` : ''}`,
  ];
  if (b.failure) lines.push(`failure: ${String(b.failure)}`);
  const occ = (b.occurrences ?? []) as Msg[];
  if (occ.length > 0) lines.push('occurrences:', ...occurrenceLines(occ));
  out.write(lines.join('\n'));
}

/** A page of backfills as a table. */
export function printBackfills(out: Out, res: Msg): void {
  if (out.json) return out.write(JSON.stringify(plain(res), null, 2));
  const rows = ((res.backfills ?? []) as Msg[]).map((b) =>
    [
      String(b.backfill_id),
      status(b),
      tsText(b.from),
      tsText(b.to),
      n(b.planned),
      n(b.fired),
      n(b.remaining),
      tsText(b.created_at),
    ].join('  '),
  );
  out.write(['ID  STATUS  FROM  TO  PLANNED  FIRED  REMAINING  CREATED', ...rows].join('\n'));
}

/** Adds the backfill commands to the program. */
export function registerBackfillCommands(program: Command, cli: BackfillCli): void {
  const backfill = program
    .command('backfill')
    .description(
      'run the occurrences of a job between --from and --to that did not run (--dry-run lists them); list, get, cancel',
    )
    .argument('[job_id]', 'the job to backfill')
    .option('--from <instant>', 'start of the window, included (RFC 3339)')
    .option('--to <instant>', 'end of the window, not included (RFC 3339)')
    .option('--dry-run', 'list the occurrences it would fire; change nothing')
    .option('--max-per-second <n>', 'pace of the fires (default 10; the tenant cap still applies)')
    .option(
      '--skip-reasons <list>',
      'ledger skip reasons that count as not run, comma-separated (default: all but INVALID_DEFINITION)',
    )
    .option('--only-never-fired', 'only occurrences that never fired (no skip reason counts)')
    .action(
      async (
        jobId: string | undefined,
        o: {
          from?: string;
          to?: string;
          dryRun?: boolean;
          maxPerSecond?: string;
          skipReasons?: string;
          onlyNeverFired?: boolean;
        },
      ) => {
        if (!jobId) throw new CliError('backfill: expected a job id (or list, get, cancel)');
        if (o.from === undefined || o.to === undefined)
          throw new CliError('backfill: --from and --to are required');
        let rate = 0;
        if (o.maxPerSecond !== undefined) {
          rate = Number(o.maxPerSecond);
          if (!Number.isFinite(rate) || rate <= 0)
            throw new CliError(`--max-per-second ${o.maxPerSecond}: expected a positive number`);
        }
        const res = await cli.call('CreateBackfill', {
          job_id: jobId,
          from: timestampOf(o.from, '--from'),
          to: timestampOf(o.to, '--to'),
          dry_run: Boolean(o.dryRun),
          max_per_second: rate,
          skip_reasons: o.skipReasons
            ? o.skipReasons
                .split(',')
                .map((s) => s.trim().toUpperCase())
                .filter(Boolean)
            : [],
          only_never_fired: Boolean(o.onlyNeverFired),
        });
        if (res.plan) printBackfillPlan(cli.out(), res.plan as Msg);
        else printBackfill(cli.out(), res.backfill as Msg);
      },
    );
  backfill
    .command('list')
    .description("a job's backfills, newest first")
    .argument('<job_id>')
    .option('--page-size <n>', 'items per page (default 50)')
    .option('--page-token <token>', 'continue after a previous page')
    .action(async (jobId: string, o: { pageSize?: string; pageToken?: string }) =>
      printBackfills(
        cli.out(),
        await cli.call('ListBackfills', {
          job_id: jobId,
          page_size: o.pageSize ? Number(o.pageSize) : 0,
          page_token: o.pageToken ?? '',
        }),
      ),
    );
  backfill
    .command('get')
    .description("a backfill's progress and each planned occurrence")
    .argument('<job_id>')
    .argument('<backfill_id>')
    .action(async (jobId: string, backfillId: string) =>
      printBackfill(cli.out(), await cli.call('GetBackfill', { job_id: jobId, backfill_id: backfillId })),
    );
  backfill
    .command('cancel')
    .description('stop a backfill (fires already made stay)')
    .argument('<job_id>')
    .argument('<backfill_id>')
    .action(async (jobId: string, backfillId: string) =>
      printBackfill(cli.out(), await cli.call('CancelBackfill', { job_id: jobId, backfill_id: backfillId })),
    );
}
