/** Job: its definition, upcoming fires (with DST marks), the occurrence ledger, its runs and actions. */
import { useState } from 'preact/hooks';
import {
  ApiError,
  call,
  describeError,
  qs,
  type Job,
  type Occurrence,
  type PreviewFire,
  type Run,
} from '../api';
import {
  dstNote,
  instantInWords,
  labelsText,
  maskTarget,
  millisBetween,
  ms,
  relative,
  retryInWords,
  scheduleInWords,
  scheduleRaw,
  viewerZone,
} from '../format';
import { Badge, Confirm, ErrorBox, navigate, Notice, TraceId, useLoad, When, type Ctx } from '../ui';

type Action = 'pause' | 'resume' | 'trigger' | 'delete';

const REASONS: Record<string, string> = {
  COALESCED: 'several missed occurrences fired once (misfire FIRE_ONCE)',
  MISFIRE_SKIP: 'missed, and the misfire policy is SKIP',
  OVERLAP: 'the previous run was still going (overlap FORBID)',
  OUTSIDE_CATCH_UP_WINDOW: 'older than the catch-up window when the scheduler got to it',
  CATCH_UP_LIMIT: 'beyond how many missed occurrences FIRE_ALL catches up',
  LATE: "its run started later than the job's tolerance (tolerance_ms) after the nominal time",
  MISSED: 'its run had not started by the next occurrence (or the SLO deadline)',
};

/** A fired occurrence's SLO mark (LATE / MISSED), with its lateness; nothing when on time. */
function SloMark(props: { o: Occurrence }) {
  const { o } = props;
  if (o.reason !== 'LATE' && o.reason !== 'MISSED') return null;
  return (
    <div class="small slo">
      <Badge value={o.reason} />{' '}
      {typeof o.lateness_ms === 'number'
        ? `started ${formatMs(o.lateness_ms)} after its nominal time`
        : 'not started'}
      {` — ${REASONS[o.reason]}`}
    </div>
  );
}

function formatMs(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

function Definition(props: { job: Job }) {
  const { job } = props;
  const s = job.schedule;
  const p = job.policies;
  const zone = s.time_zone ?? 'UTC';
  const rows: [string, string][] = [
    ['Schedule', `${scheduleInWords(s)} (${s.kind}: ${scheduleRaw(s)})`],
    ['Time zone', s.time_zone ?? 'UTC'],
    ...(s.kind === 'cron' || s.kind === 'rrule'
      ? ([['DST policy', `gap ${s.dst_gap ?? 'AUTO'}, repeat ${s.dst_repeat ?? 'AUTO'}`]] as [
          string,
          string,
        ][])
      : []),
    ...(s.start_at ? ([['Starts', instantInWords(s.start_at, zone)]] as [string, string][]) : []),
    ...(s.end_at ? ([['Ends', instantInWords(s.end_at, zone)]] as [string, string][]) : []),
    ...(s.max_fires ? ([['Max fires', String(s.max_fires)]] as [string, string][]) : []),
    [
      'Misfire',
      `${String(p.misfire ?? 'FIRE_ONCE')}${p.catch_up_window_ms ? `, catch-up window ${ms(Number(p.catch_up_window_ms))}` : ''}`,
    ],
    ['Overlap', String(p.overlap ?? 'ALLOW')],
    ['Jitter', ms(Number(p.jitter_ms ?? 0))],
    [
      'Fire SLO',
      `${typeof p.tolerance_ms === 'number' ? `tolerance ${ms(p.tolerance_ms)}` : 'tolerance: the deployment default'}${p.slo_metrics === true ? ', per-job metrics' : ''}`,
    ],
    ['Result events', String(p.result_events ?? 'ALL')],
    ['Retry', retryInWords(p.retry)],
    ['Labels', labelsText(job.labels) || '—'],
    ['Tenant · shard · fence', `${job.tenant_id} · shard ${job.shard} · fence token ${job.fence_token}`],
    [
      'Version',
      `${job.etag} (updated ${instantInWords(job.updated_at, viewerZone())}, ${relative(job.updated_at)})`,
    ],
  ];
  return (
    <section class="card" aria-labelledby="def-title">
      <h2 id="def-title">Definition</h2>
      <dl class="def">
        {rows.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
      <h3>Target (secrets masked)</h3>
      <pre class="json">{JSON.stringify(maskTarget(job.target), null, 2)}</pre>
      <h3>Payload</h3>
      <pre class="json">{JSON.stringify(job.payload, null, 2)}</pre>
    </section>
  );
}

function Upcoming(props: { job: Job }) {
  const { job } = props;
  const preview = useLoad(
    () =>
      call<{ fires: PreviewFire[]; truncated: boolean; truncated_by: string }>(
        'POST',
        '/v1/schedules/preview',
        {
          body: { schedule: job.schedule, count: 20 },
        },
      ).then((r) => r.body),
    // The job id too: two jobs at the same version (both v1) are different schedules.
    [job.job_id, job.etag],
  );
  return (
    <section class="card" aria-labelledby="up-title">
      <h2 id="up-title">Upcoming fires</h2>
      {job.status !== 'SCHEDULED' && (
        <p class="muted">
          The job is {job.status.toLowerCase()}: these are the schedule's next times, not fires that will
          happen.
        </p>
      )}
      <ErrorBox error={preview.error} />
      <ol class="fires">
        {(preview.data?.fires ?? []).map((f) => {
          const note = dstNote(f, job.schedule.dst_repeat);
          return (
            <li key={f.at} class={note ? 'dst' : ''}>
              <When iso={f.at} zone={f.time_zone} />
              {note && <span class="dst-note">DST: {note}</span>}
            </li>
          );
        })}
      </ol>
      {preview.data && preview.data.fires.length === 0 && (
        <p class="empty">No more fires: the schedule has ended.</p>
      )}
      {preview.data?.truncated && (
        <p class="muted small">Preview stopped early ({preview.data.truncated_by}).</p>
      )}
    </section>
  );
}

function Ledger(props: { job: Job; version: number }) {
  const { job } = props;
  const [token, setToken] = useState('');
  const ledger = useLoad(
    () =>
      call<{ occurrences: Occurrence[]; next_page_token: string }>(
        'GET',
        `/v1/jobs/${encodeURIComponent(job.job_id)}/occurrences${qs({ page_size: 25, page_token: token })}`,
      ).then((r) => r.body),
    [job.job_id, token, props.version],
  );
  const zone = job.schedule.time_zone ?? 'UTC';
  return (
    <section class="card" aria-labelledby="ledger-title">
      <h2 id="ledger-title">Occurrence ledger</h2>
      <p class="muted small">Every nominal time: what fired, and what did not and why. Newest first.</p>
      <ErrorBox error={ledger.error} />
      <ol class="timeline">
        {(ledger.data?.occurrences ?? []).map((o) => (
          <li key={`${o.nominal_time}-${o.fence_token ?? o.reason}`} class={`occ ${o.outcome.toLowerCase()}`}>
            <div>
              <Badge value={o.outcome} /> <When iso={o.nominal_time} zone={zone} compact />
              {o.occurrences > 1 && (
                <span class="muted small">
                  {' '}
                  … to {new Date(o.last_nominal_time).toISOString()} ({o.occurrences} occurrences)
                </span>
              )}
            </div>
            {o.outcome === 'FIRED' ? (
              <div class="small">
                {o.trigger === 'SCHEDULE'
                  ? 'scheduled'
                  : o.trigger === 'MANUAL'
                    ? 'triggered by hand'
                    : o.trigger === 'BACKFILL'
                      ? 'backfilled'
                      : 'replayed'}{' '}
                · fence {o.fence_token} · run <Badge value={o.run_status ?? 'not started'} />
                {o.fence_token !== undefined && (
                  <a href={`#run-${o.fence_token}`} class="small">
                    {' '}
                    see run
                  </a>
                )}
              </div>
            ) : null}
            {o.outcome === 'FIRED' ? (
              <SloMark o={o} />
            ) : (
              <div class="small">
                reason <strong>{o.reason}</strong>
                {o.reason && REASONS[o.reason] ? ` — ${REASONS[o.reason]}` : ''}
              </div>
            )}
          </li>
        ))}
      </ol>
      {ledger.data && ledger.data.occurrences.length === 0 && (
        <p class="empty">Nothing yet: the ledger fills when the job first fires (or Trigger now).</p>
      )}
      <div class="pager">
        {token && (
          <button type="button" onClick={() => setToken('')}>
            Newest
          </button>
        )}
        {ledger.data?.next_page_token && (
          <button type="button" onClick={() => setToken(ledger.data!.next_page_token)}>
            Older →
          </button>
        )}
      </div>
    </section>
  );
}

function Runs(props: { job: Job; version: number }) {
  const { job } = props;
  const [token, setToken] = useState('');
  const runs = useLoad(
    () =>
      call<{ runs: Run[]; next_page_token: string }>(
        'GET',
        `/v1/jobs/${encodeURIComponent(job.job_id)}/runs${qs({ page_size: 25, page_token: token })}`,
      ).then((r) => r.body),
    [job.job_id, token, props.version],
  );
  return (
    <section class="card" aria-labelledby="runs-title">
      <h2 id="runs-title">Runs</h2>
      <ErrorBox error={runs.error} />
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Fence</th>
              <th scope="col">Status</th>
              <th scope="col" class="num">
                Attempt
              </th>
              <th scope="col">HTTP</th>
              <th scope="col">Scheduled for</th>
              <th scope="col" class="num">
                Lateness
              </th>
              <th scope="col" class="num">
                Duration
              </th>
              <th scope="col">Trace id</th>
              <th scope="col">Error</th>
            </tr>
          </thead>
          <tbody>
            {(runs.data?.runs ?? []).map((r) => (
              <tr key={r.fence_token} id={`run-${r.fence_token}`}>
                <td class="mono">
                  {r.fence_token}
                  {r.trigger === 'BACKFILL' && <span class="muted small"> backfill</span>}
                </td>
                <td>
                  <Badge value={r.status} />
                </td>
                <td class="num">{r.attempt}</td>
                <td>{r.http_status ?? '—'}</td>
                <td>
                  <When iso={r.scheduled_for} zone={job.schedule.time_zone ?? 'UTC'} compact />
                </td>
                <td class="num">{ms(millisBetween(r.scheduled_for, r.started_at))}</td>
                <td class="num">{ms(millisBetween(r.started_at, r.finished_at))}</td>
                <td>
                  <TraceId id={r.trace_id} />
                </td>
                <td class="error-text">{r.error ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {runs.data && runs.data.runs.length === 0 && (
        <p class="empty">No runs yet. Trigger now to fire it once.</p>
      )}
      {runs.data?.next_page_token && (
        <button type="button" onClick={() => setToken(runs.data!.next_page_token)}>
          Older runs →
        </button>
      )}
    </section>
  );
}

export function JobView(props: { ctx: Ctx; jobId: string }) {
  const { jobId } = props;
  const [version, setVersion] = useState(0);
  const [pending, setPending] = useState<Action | null>(null);
  const [notice, setNotice] = useState<{ text: string; kind: 'ok' | 'bad' } | null>(null);
  const job = useLoad(
    () => call<Job>('GET', `/v1/jobs/${encodeURIComponent(jobId)}`).then((r) => r.body),
    [jobId, version],
  );
  const j = job.data;
  const refresh = () => setVersion((v) => v + 1);

  const act = async (action: Action) => {
    setPending(null);
    if (!j) return;
    const path = `/v1/jobs/${encodeURIComponent(j.job_id)}`;
    try {
      if (action === 'delete') {
        // With the etag: a job someone changed since this page loaded is not deleted blindly.
        await call('DELETE', path, { headers: { 'if-match': `"${j.etag}"` } });
        navigate('/jobs');
        return;
      }
      const r = await call<{ fire_id?: string }>('POST', `${path}/${action}`);
      setNotice({
        text:
          action === 'trigger'
            ? `Triggered: fire ${r.body.fire_id ?? ''} is on its way.`
            : `${action === 'pause' ? 'Paused' : 'Resumed'}.`,
        kind: 'ok',
      });
      refresh();
    } catch (e) {
      setNotice({
        text:
          e instanceof ApiError && e.status === 412
            ? 'Someone changed this job since you opened it; reload to see their version, then try again.'
            : describeError(e),
        kind: 'bad',
      });
    }
  };

  if (job.error && !j)
    return (
      <section>
        <h1>Job {jobId}</h1>
        <ErrorBox error={job.error} />
        <p>
          <a href="#/jobs">Back to the jobs</a>
        </p>
      </section>
    );
  if (!j) return <p class="muted">Loading…</p>;
  return (
    <section aria-labelledby="job-title">
      <p class="crumbs">
        <a href="#/jobs">Jobs</a> / {j.job_id}
      </p>
      <div class="title-row">
        <h1 id="job-title">
          {j.job_id} <Badge value={j.status} />
        </h1>
        <div class="actions">
          {j.status === 'SCHEDULED' && (
            <button type="button" onClick={() => void act('pause')}>
              Pause
            </button>
          )}
          {j.status === 'PAUSED' && (
            <button type="button" onClick={() => void act('resume')}>
              Resume
            </button>
          )}
          <button type="button" class="primary" onClick={() => void act('trigger')}>
            Trigger now
          </button>
          <a class="button" href={`#/jobs/${encodeURIComponent(j.job_id)}/edit`}>
            Edit
          </a>
          <button type="button" onClick={refresh}>
            Refresh
          </button>
          <button type="button" class="danger" onClick={() => setPending('delete')}>
            Delete
          </button>
        </div>
      </div>
      <Notice text={notice?.text ?? null} kind={notice?.kind} />
      <p class="summary">
        {scheduleInWords(j.schedule)} · next fire:{' '}
        {j.status === 'SCHEDULED' ? (
          <When iso={j.next_nominal_at} zone={j.schedule.time_zone ?? 'UTC'} />
        ) : (
          'none'
        )}{' '}
        · fired {j.fires_count} {j.fires_count === 1 ? 'time' : 'times'} on schedule · last run{' '}
        <Badge value={j.last_run?.status ?? null} />
      </p>
      <div class="grid">
        <Definition job={j} />
        <Upcoming job={j} />
      </div>
      <Ledger job={j} version={version} />
      <Runs job={j} version={version} />
      <Confirm
        open={pending === 'delete'}
        title={`Delete ${j.job_id}?`}
        confirmLabel="Delete"
        danger
        onCancel={() => setPending(null)}
        onConfirm={() => void act('delete')}
      >
        <p>It stops firing and cannot be restored. Its runs stay in the ledger.</p>
      </Confirm>
    </section>
  );
}
