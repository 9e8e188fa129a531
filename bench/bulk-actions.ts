/**
 * Label-wide control at scale: seeds N jobs (half of them labelled team=payments) in a database
 * of its own, then times a dry run, a bulk pause and a bulk resume of the labelled half through
 * BulkActionService, with the event loop's delay measured during each (the windows must not
 * stall it). `npm run bench:bulk` (BENCH_JOBS=1000000 by default; DATABASE_URL names the server).
 * Prints the figures and writes bench/results/bulk-<date>.{json,md}.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { MAX_JITTER_MS } from '@tickwork/domain';
import { BulkActionService, JobService, type Caller } from '@tickwork/jobs';
import {
  BulkRepository,
  createPool,
  ensureDatabase,
  HistoryRepository,
  JobRepository,
  migrate,
} from '@tickwork/store';

async function main(): Promise<void> {
  const server = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/tickwork');
  server.pathname = '/tickwork_bench_bulk';
  const url = server.toString();
  const n = Number(process.env.BENCH_JOBS ?? 1_000_000);
  await ensureDatabase(url);
  const pool = createPool(url);
  try {
    await migrate(pool);
    await pool.query('TRUNCATE jobs, audit_events');
    let t = Date.now();
    await pool.query(
      `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, time_zone, status, next_run_at, next_nominal_at, target, payload, policies, labels)
       SELECT 'job-' || lpad(i::text, 8, '0'), 'acme', i % 16, 'cron',
              '{"kind":"cron","expression":"0 * * * *","time_zone":"UTC"}', 'UTC', 'SCHEDULED',
              now() + interval '1 hour', now() + interval '1 hour', '{"type":"kafka","topic":"x"}', '{"a":1}', '{}',
              jsonb_build_object('team', CASE WHEN i % 2 = 0 THEN 'payments' ELSE 'data' END, 'env', 'prod')
         FROM generate_series(1, $1::int) i`,
      [n],
    );
    await pool.query('ANALYZE jobs');
    console.log(`seeded ${n} jobs in ${Date.now() - t} ms`);
    const service = new BulkActionService(
      new BulkRepository(pool),
      new JobService(new JobRepository(pool), new HistoryRepository(pool), {
        shardCount: 16,
        herdJitterMs: 0,
        limits: { minIntervalMs: 1_000, maxPayloadBytes: 262_144, maxJitterMs: MAX_JITTER_MS },
      }),
    );
    const caller: Caller = { actor: 'bench', role: 'tenant', tenantId: 'acme', via: 'rest' };
    const steps: {
      step: string;
      ms: number;
      matched: number;
      changed: number;
      delayMaxMs: number;
      delayP99Ms: number;
    }[] = [];
    const loadBefore = loadavg()[0]!;
    for (const body of [
      { action: 'PAUSE', label_selector: 'team=payments,env=prod', dry_run: true },
      { action: 'PAUSE', label_selector: 'team=payments,env=prod' },
      { action: 'RESUME', label_selector: 'team=payments,env=prod', missed: 'SKIP' },
    ]) {
      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      t = Date.now();
      const r = await service.run(caller, body);
      delay.disable();
      const ms = Date.now() - t;
      steps.push({
        step: `${body.action}${body.dry_run ? ' (dry run)' : ''}`,
        ms,
        matched: r.matched,
        changed: r.changed,
        delayMaxMs: delay.max / 1e6,
        delayP99Ms: delay.percentile(99) / 1e6,
      });
      console.log(
        `${body.action}${body.dry_run ? ' (dry run)' : ''}: ${ms} ms, matched ${r.matched}, changed ${r.changed}` +
          `${r.changed > 0 ? ` (${Math.round(r.changed / (ms / 1000))} jobs/s)` : ''}; event-loop delay max ` +
          `${(delay.max / 1e6).toFixed(1)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms`,
      );
    }
    const date = new Date().toISOString();
    const md = [
      `# bench:bulk — ${date}`,
      '',
      `${n} jobs of one tenant, half labelled team=payments; 1-minute load average ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after.`,
      '',
      '| step | ms | matched | changed | jobs/s | event-loop delay max / p99 (ms) |',
      '| --- | --- | --- | --- | --- | --- |',
      ...steps.map(
        (x) =>
          `| ${x.step} | ${x.ms} | ${x.matched} | ${x.changed} | ${x.changed > 0 ? Math.round(x.changed / (x.ms / 1000)) : '—'} | ${x.delayMaxMs.toFixed(1)} / ${x.delayP99Ms.toFixed(1)} |`,
      ),
      '',
    ].join('\n');
    const dir = join(process.cwd(), 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    const stamp = date.replace(/[:.]/g, '-');
    writeFileSync(
      join(dir, `bulk-${stamp}.json`),
      JSON.stringify({ date, jobs: n, loadBefore, steps }, null, 2),
    );
    writeFileSync(join(dir, `bulk-${stamp}.md`), md);
  } finally {
    await pool.end();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
