/** Lateness: p50/p99 of run start − scheduled time over the last hour or day, per job and tenant, with counts. */
import { useState } from 'preact/hooks';
import { call, qs } from '../api';
import { ms } from '../format';
import { ErrorBox, jobHref, navigate, useLoad, type Ctx } from '../ui';

interface Row {
  key: string;
  runs: number;
  p50_ms: number | null;
  p99_ms: number | null;
}
interface Lateness {
  window: 'hour' | 'day';
  buckets: { start: string; runs: number; p50_ms: number | null; p99_ms: number | null }[];
  overall: { p50_ms: number | null; p99_ms: number | null };
  counts: { fired: number; retried: number; dead_lettered: number; skipped: number };
  by_job: Row[];
  by_tenant: Row[];
  truncated: boolean;
}

/** A two-line SVG chart (p50, p99) over the window's buckets; the numbers are in the table below it too. */
function Chart(props: { data: Lateness }) {
  const { buckets } = props.data;
  const W = 720;
  const H = 220;
  const pad = { l: 56, r: 12, t: 12, b: 28 };
  const max = Math.max(1, ...buckets.map((b) => b.p99_ms ?? 0));
  const x = (i: number) => pad.l + (i * (W - pad.l - pad.r)) / Math.max(1, buckets.length - 1);
  const y = (v: number) => H - pad.b - (v / max) * (H - pad.t - pad.b);
  const line = (key: 'p50_ms' | 'p99_ms') =>
    buckets
      .map((b, i) => (b[key] === null ? null : `${x(i)},${y(b[key] as number)}`))
      .filter(Boolean)
      .join(' ');
  const label = (iso: string) => {
    const d = new Date(iso);
    return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
  };
  return (
    <svg
      viewBox={`0 0 ${W} ${H}`}
      class="chart"
      role="img"
      aria-label={`Lateness p50 and p99 over the last ${props.data.window}`}
    >
      {[0, 0.5, 1].map((f) => (
        <g key={f}>
          <line x1={pad.l} x2={W - pad.r} y1={y(max * f)} y2={y(max * f)} class="gridline" />
          <text x={pad.l - 6} y={y(max * f) + 4} text-anchor="end" class="axis">
            {ms(max * f)}
          </text>
        </g>
      ))}
      {buckets.map((b, i) =>
        i % Math.ceil(buckets.length / 6) === 0 ? (
          <text key={b.start} x={x(i)} y={H - 8} text-anchor="middle" class="axis">
            {label(b.start)}
          </text>
        ) : null,
      )}
      <polyline points={line('p99_ms')} class="p99" fill="none" />
      <polyline points={line('p50_ms')} class="p50" fill="none" />
      {buckets.map((b, i) =>
        b.p99_ms !== null ? <circle key={`c${i}`} cx={x(i)} cy={y(b.p99_ms)} r={3} class="p99" /> : null,
      )}
      {buckets.map((b, i) =>
        b.p50_ms !== null ? <circle key={`d${i}`} cx={x(i)} cy={y(b.p50_ms)} r={3} class="p50" /> : null,
      )}
    </svg>
  );
}

function Table(props: { title: string; rows: Row[]; link?: boolean }) {
  return (
    <section class="card" aria-label={props.title}>
      <h2>{props.title}</h2>
      {props.rows.length === 0 ? (
        <p class="empty">No runs in this window.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">{props.link ? 'Job' : 'Tenant'}</th>
              <th scope="col" class="num">
                Runs
              </th>
              <th scope="col" class="num">
                p50
              </th>
              <th scope="col" class="num">
                p99
              </th>
            </tr>
          </thead>
          <tbody>
            {props.rows.map((r) => (
              <tr key={r.key}>
                <td>{props.link ? <a href={jobHref(r.key)}>{r.key}</a> : r.key}</td>
                <td class="num">{r.runs}</td>
                <td class="num">{ms(r.p50_ms)}</td>
                <td class="num">{ms(r.p99_ms)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function LatenessView(props: { ctx: Ctx; params: URLSearchParams }) {
  const { ctx, params } = props;
  const window = params.get('window') === 'day' ? 'day' : 'hour';
  const jobId = params.get('job') ?? '';
  const [jobDraft, setJobDraft] = useState(jobId);
  const go = (w: string, j: string) => navigate(`/lateness${qs({ window: w, job: j })}`);
  const data = useLoad(
    () =>
      call<Lateness>('GET', `/v1/lateness${qs({ window, tenant_id: ctx.tenant, job_id: jobId })}`).then(
        (r) => r.body,
      ),
    [window, jobId, ctx.tenant],
  );
  const d = data.data;
  return (
    <section aria-labelledby="late-title">
      <h1 id="late-title">
        Lateness{jobId ? ` of ${jobId}` : ctx.tenant ? ` of ${ctx.tenant}` : ''} over the last {window}
      </h1>
      <p class="muted">
        How late runs started after their scheduled time, from the run ledger (no Prometheus needed).
      </p>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          go(window, jobDraft.trim());
        }}
      >
        <div role="group" aria-label="Window" class="seg">
          {(['hour', 'day'] as const).map((w) => (
            <button key={w} type="button" aria-pressed={window === w} onClick={() => go(w, jobId)}>
              Last {w}
            </button>
          ))}
        </div>
        <div>
          <label for="late-job">Job id (empty: the whole tenant)</label>
          <input id="late-job" value={jobDraft} onInput={(e) => setJobDraft(e.currentTarget.value)} />
        </div>
        <button type="submit">Show</button>
      </form>
      <ErrorBox error={data.error} />
      {d && (
        <>
          <div class="cards">
            <div class="stat">
              <span class="n">{ms(d.overall.p50_ms)}</span>
              <span>p50 lateness</span>
            </div>
            <div class="stat">
              <span class="n">{ms(d.overall.p99_ms)}</span>
              <span>p99 lateness</span>
            </div>
            <div class="stat">
              <span class="n">{d.counts.fired}</span>
              <span>fired</span>
            </div>
            <div class="stat">
              <span class="n">{d.counts.skipped}</span>
              <span>skipped</span>
            </div>
            <div class="stat">
              <span class="n">{d.counts.retried}</span>
              <span>retried</span>
            </div>
            <div class="stat">
              <span class="n">{d.counts.dead_lettered}</span>
              <span>dead-lettered</span>
            </div>
          </div>
          {d.truncated && (
            <p class="notice bad">
              Busy window: percentiles are of each bucket's newest runs (8,000 in all); retried and
              dead-lettered are scaled from them.
            </p>
          )}
          <section class="card">
            <h2>
              p50 <span class="key p50">■</span> and p99 <span class="key p99">■</span> per{' '}
              {window === 'hour' ? '5 minutes' : 'hour'} <span class="muted small">(times in your zone)</span>
            </h2>
            {d.counts.fired === 0 ? (
              <p class="empty">No runs in this window yet: lateness appears once jobs fire.</p>
            ) : (
              <Chart data={d} />
            )}
          </section>
          <div class="grid">
            {!jobId && <Table title="Latest jobs (worst p99 first)" rows={d.by_job} link />}
            {!jobId && ctx.me.role === 'admin' && !ctx.tenant && (
              <Table title="Per tenant" rows={d.by_tenant} />
            )}
          </div>
        </>
      )}
    </section>
  );
}
