/** Jobs: the table, with search, filters, server paging and bulk actions. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { call, describeError, qs, type Job } from '../api';
import { scheduleInWords, scheduleRaw } from '../format';
import { Badge, Confirm, ErrorBox, jobHref, navigate, Notice, useLoad, When, type Ctx } from '../ui';

type Bulk = 'pause' | 'resume' | 'trigger' | 'delete';
const BULK_LABEL: Record<Bulk, string> = {
  pause: 'Pause',
  resume: 'Resume',
  trigger: 'Trigger now',
  delete: 'Delete',
};

const FILTERS = ['q', 'status', 'labels', 'target'] as const;

export function JobsView(props: { ctx: Ctx; params: URLSearchParams }) {
  const { ctx, params } = props;
  const filter = Object.fromEntries(FILTERS.map((f) => [f, params.get(f) ?? ''])) as Record<
    (typeof FILTERS)[number],
    string
  >;
  const [draft, setDraft] = useState(filter);
  // Page tokens of the pages before this one, so Previous works with keyset paging.
  const [tokens, setTokens] = useState<string[]>(['']);
  const token = tokens[tokens.length - 1] ?? '';
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [pending, setPending] = useState<Bulk | null>(null);
  const [notice, setNotice] = useState<{ text: string; kind: 'ok' | 'bad' } | null>(null);
  const pageSize = 25;
  // The address is the truth: a link or Back that changes the filters resets the form and the
  // paging. Only a change does: the form starts from the address already, and resetting it once
  // more after the first render would drop what was typed in the moment before the effect ran.
  const shownParams = useRef(params.toString());
  useEffect(() => {
    if (shownParams.current === params.toString()) return;
    shownParams.current = params.toString();
    setDraft(filter);
    setTokens(['']);
    setSelected(new Set());
    setNotice(null);
  }, [params.toString()]);
  const list = useLoad(
    () =>
      call<{ jobs: Job[]; next_page_token: string }>(
        'GET',
        `/v1/jobs${qs({
          tenant_id: ctx.tenant,
          status: filter.status,
          label_selector: filter.labels,
          job_id_prefix: filter.q,
          target_type: filter.target,
          page_size: pageSize,
          page_token: token,
          include: 'last_run',
        })}`,
      ).then((r) => r.body),
    [ctx.tenant, params.toString(), token],
  );
  const jobs = list.data?.jobs ?? [];

  const apply = (e: Event) => {
    e.preventDefault();
    setTokens(['']);
    setSelected(new Set());
    const p = new URLSearchParams();
    for (const f of FILTERS) if (draft[f]) p.set(f, draft[f]);
    navigate(`/jobs${p.toString() ? `?${p.toString()}` : ''}`);
  };

  const toggle = (id: string) => {
    const s = new Set(selected);
    if (s.has(id)) s.delete(id);
    else s.add(id);
    setSelected(s);
  };
  const allOnPage = jobs.length > 0 && jobs.every((j) => selected.has(j.job_id));

  const runBulk = async (action: Bulk) => {
    setPending(null);
    const ids = [...selected];
    const failures: string[] = [];
    for (const id of ids) {
      const path = `/v1/jobs/${encodeURIComponent(id)}`;
      try {
        if (action === 'delete') await call('DELETE', path);
        else await call('POST', `${path}/${action}`);
      } catch (e) {
        failures.push(`${id}: ${describeError(e)}`);
      }
    }
    const done = ids.length - failures.length;
    setNotice({
      text: `${BULK_LABEL[action]}: ${done} of ${ids.length} job${ids.length === 1 ? '' : 's'} done${failures.length ? ` — ${failures.join('; ')}` : ''}`,
      kind: failures.length ? 'bad' : 'ok',
    });
    setSelected(new Set());
    list.reload();
  };

  return (
    <section aria-labelledby="jobs-title">
      <div class="title-row">
        <h1 id="jobs-title">
          Jobs{ctx.tenant ? ` of ${ctx.tenant}` : ctx.me.role === 'admin' ? ' (all tenants)' : ''}
        </h1>
        <a class="button primary" href="#/new">
          New job
        </a>
      </div>
      <form class="filters" onSubmit={apply} role="search" aria-label="Filter jobs">
        <div>
          <label for="f-q">Job id starts with</label>
          <input id="f-q" value={draft.q} onInput={(e) => setDraft({ ...draft, q: e.currentTarget.value })} />
        </div>
        <div>
          <label for="f-status">Status</label>
          <select
            id="f-status"
            value={draft.status}
            onChange={(e) => setDraft({ ...draft, status: e.currentTarget.value })}
          >
            <option value="">any</option>
            <option>SCHEDULED</option>
            <option>PAUSED</option>
            <option>COMPLETED</option>
          </select>
        </div>
        <div class="grow">
          <label for="f-labels">Labels</label>
          <input
            id="f-labels"
            placeholder="team=data,env!=prod"
            value={draft.labels}
            onInput={(e) => setDraft({ ...draft, labels: e.currentTarget.value })}
          />
        </div>
        <div>
          <label for="f-target">Target</label>
          <select
            id="f-target"
            value={draft.target}
            onChange={(e) => setDraft({ ...draft, target: e.currentTarget.value })}
          >
            <option value="">any</option>
            <option value="webhook">webhook</option>
            <option value="kafka">kafka</option>
          </select>
        </div>
        <button type="submit">Apply</button>
      </form>

      <div class="bulk" aria-live="polite">
        <span>{selected.size ? `${selected.size} selected` : 'Select jobs for bulk actions'}</span>
        {(Object.keys(BULK_LABEL) as Bulk[]).map((a) => (
          <button
            key={a}
            type="button"
            class={a === 'delete' ? 'danger' : ''}
            disabled={selected.size === 0}
            onClick={() => setPending(a)}
          >
            {BULK_LABEL[a]}
          </button>
        ))}
      </div>
      <Notice text={notice?.text ?? null} kind={notice?.kind} />
      <ErrorBox error={list.error} />

      <div class="table-wrap">
        <table class="jobs">
          <caption class="sr-only">Jobs, ordered by id</caption>
          <thead>
            <tr>
              <th scope="col">
                <input
                  type="checkbox"
                  aria-label="Select every job on this page"
                  checked={allOnPage}
                  onChange={() => {
                    const s = new Set(selected);
                    for (const j of jobs) {
                      if (allOnPage) s.delete(j.job_id);
                      else s.add(j.job_id);
                    }
                    setSelected(s);
                  }}
                />
              </th>
              <th scope="col">Job</th>
              <th scope="col">Status</th>
              <th scope="col">Schedule</th>
              <th scope="col">Next fire</th>
              <th scope="col">Last run</th>
              <th
                scope="col"
                class="num"
                title="Occurrences fired on schedule (max_fires counts these; Trigger now does not)"
              >
                Scheduled fires
              </th>
            </tr>
          </thead>
          <tbody>
            {jobs.map((j) => (
              <tr key={j.job_id} class={selected.has(j.job_id) ? 'selected' : ''}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Select ${j.job_id}`}
                    checked={selected.has(j.job_id)}
                    onChange={() => toggle(j.job_id)}
                  />
                </td>
                <td class="id">
                  <a href={jobHref(j.job_id)}>{j.job_id}</a>
                  <div class="muted small">
                    {j.tenant_id} · {j.target.type}
                    {Object.keys(j.labels).length > 0 &&
                      ` · ${Object.entries(j.labels)
                        .map(([k, v]) => `${k}=${v}`)
                        .join(' ')}`}
                  </div>
                </td>
                <td>
                  <Badge value={j.status} />
                </td>
                <td>
                  {scheduleInWords(j.schedule)}
                  <div class="muted small mono">{scheduleRaw(j.schedule)}</div>
                </td>
                <td>
                  {j.status === 'SCHEDULED' ? (
                    <When iso={j.next_nominal_at} zone={j.schedule.time_zone ?? 'UTC'} compact />
                  ) : (
                    <span class="muted">{j.status === 'PAUSED' ? 'paused' : 'none'}</span>
                  )}
                </td>
                <td>
                  {j.last_run ? (
                    <>
                      <Badge value={j.last_run.status} />
                      {j.last_run.http_status !== null && (
                        <span class="muted small"> HTTP {j.last_run.http_status}</span>
                      )}
                    </>
                  ) : (
                    <span class="muted">never ran</span>
                  )}
                </td>
                <td class="num">{j.fires_count}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {!list.loading && jobs.length === 0 && !list.error && list.data?.next_page_token && (
          <p class="empty">
            No match among the jobs looked at so far (each page looks at a bounded stretch of jobs).{' '}
            <button
              type="button"
              onClick={() => list.data && setTokens([...tokens, list.data.next_page_token])}
            >
              Look further →
            </button>
          </p>
        )}
        {!list.loading && jobs.length === 0 && !list.error && !list.data?.next_page_token && (
          <p class="empty">
            No jobs match{FILTERS.some((f) => filter[f]) ? ' these filters' : ''}.{' '}
            <a href="#/new">Create a job</a>
            {FILTERS.some((f) => filter[f]) && (
              <>
                {' '}
                or <a href="#/jobs">clear the filters</a>
              </>
            )}
            .
          </p>
        )}
        {list.loading && <p class="muted">Loading…</p>}
      </div>
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={tokens.length <= 1} onClick={() => setTokens(tokens.slice(0, -1))}>
          ← Previous
        </button>
        <span>Page {tokens.length}</span>
        <button
          type="button"
          disabled={!list.data?.next_page_token}
          onClick={() => list.data && setTokens([...tokens, list.data.next_page_token])}
        >
          Next →
        </button>
      </nav>

      <Confirm
        open={pending !== null}
        title={pending ? `${BULK_LABEL[pending]} ${selected.size} job${selected.size === 1 ? '' : 's'}?` : ''}
        confirmLabel={pending ? `${BULK_LABEL[pending]} ${selected.size}` : ''}
        danger={pending === 'delete'}
        onCancel={() => setPending(null)}
        onConfirm={() => pending && void runBulk(pending)}
      >
        <p>
          {pending === 'delete'
            ? 'Deleted jobs stop firing and cannot be restored.'
            : pending === 'trigger'
              ? 'Each job fires once now, outside its schedule.'
              : 'This changes every selected job.'}
        </p>
        <ul class="small">
          {[...selected].slice(0, 10).map((id) => (
            <li key={id}>{id}</li>
          ))}
          {selected.size > 10 && <li>and {selected.size - 10} more</li>}
        </ul>
      </Confirm>
    </section>
  );
}
