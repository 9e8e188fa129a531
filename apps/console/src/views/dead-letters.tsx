/** Dead letters: fires that exhausted their retries; replay one or a selection. */
import { useState } from 'preact/hooks';
import { call, describeError, qs, type DeadLetter } from '../api';
import { relative } from '../format';
import { Confirm, ErrorBox, jobHref, Notice, TraceId, useLoad, type Ctx } from '../ui';

export function DeadLettersView(props: { ctx: Ctx }) {
  const { ctx } = props;
  const [tokens, setTokens] = useState<string[]>(['']);
  const [jobFilter, setJobFilter] = useState('');
  const [jobDraft, setJobDraft] = useState('');
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [confirming, setConfirming] = useState<string[] | null>(null);
  const [notice, setNotice] = useState<{ text: string; kind: 'ok' | 'bad' } | null>(null);
  const token = tokens[tokens.length - 1] ?? '';
  const list = useLoad(
    () =>
      call<{ dead_letters: DeadLetter[]; next_page_token: string }>(
        'GET',
        `/v1/dead-letters${qs({ tenant_id: ctx.tenant, job_id: jobFilter, page_size: 25, page_token: token })}`,
      ).then((r) => r.body),
    [ctx.tenant, jobFilter, token],
  );
  const rows = list.data?.dead_letters ?? [];
  const replayable = rows.filter((d) => !d.replay_fire_id);
  const allSelected = replayable.length > 0 && replayable.every((d) => selected.has(d.fire_id));

  const replay = async (ids: string[]) => {
    setConfirming(null);
    const failures: string[] = [];
    for (const id of ids) {
      try {
        await call('POST', `/v1/dead-letters/${encodeURIComponent(id)}/replay`);
      } catch (e) {
        failures.push(`${id}: ${describeError(e)}`);
      }
    }
    setNotice({
      text: `Replayed ${ids.length - failures.length} of ${ids.length}${failures.length ? ` — ${failures.join('; ')}` : ''}`,
      kind: failures.length ? 'bad' : 'ok',
    });
    setSelected(new Set());
    list.reload();
  };

  return (
    <section aria-labelledby="dlq-title">
      <h1 id="dlq-title">Dead letters{ctx.tenant ? ` of ${ctx.tenant}` : ''}</h1>
      <p class="muted">
        Fires whose every attempt failed. Replaying one fires it again with a new fence token.
      </p>
      <form
        class="filters"
        role="search"
        aria-label="Filter dead letters"
        onSubmit={(e) => {
          e.preventDefault();
          setTokens(['']);
          setJobFilter(jobDraft.trim());
        }}
      >
        <div>
          <label for="dl-job">Job id</label>
          <input id="dl-job" value={jobDraft} onInput={(e) => setJobDraft(e.currentTarget.value)} />
        </div>
        <button type="submit">Apply</button>
      </form>
      <div class="bulk">
        <span>{selected.size ? `${selected.size} selected` : 'Select dead letters to replay several'}</span>
        <button
          type="button"
          class="primary"
          disabled={selected.size === 0}
          onClick={() => setConfirming([...selected])}
        >
          Replay selected
        </button>
      </div>
      <Notice text={notice?.text ?? null} kind={notice?.kind} />
      <ErrorBox error={list.error} />
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">
                <input
                  type="checkbox"
                  aria-label="Select every replayable dead letter on this page"
                  checked={allSelected}
                  onChange={() =>
                    setSelected(allSelected ? new Set() : new Set(replayable.map((d) => d.fire_id)))
                  }
                />
              </th>
              <th scope="col">Fire</th>
              <th scope="col" class="num">
                Attempts
              </th>
              <th scope="col">Last error</th>
              <th scope="col">Dead-lettered</th>
              <th scope="col">Replay</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((d) => (
              <tr key={d.fire_id}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Select ${d.fire_id}`}
                    disabled={!!d.replay_fire_id}
                    checked={selected.has(d.fire_id)}
                    onChange={() => {
                      const s = new Set(selected);
                      if (s.has(d.fire_id)) s.delete(d.fire_id);
                      else s.add(d.fire_id);
                      setSelected(s);
                    }}
                  />
                </td>
                <td>
                  <a href={jobHref(d.job_id)}>{d.job_id}</a>
                  <div class="muted small mono">
                    {d.fire_id} · {d.tenant_id}
                  </div>
                  {d.trace_id && (
                    <div class="small">
                      trace <TraceId id={d.trace_id} />
                    </div>
                  )}
                </td>
                <td class="num">{d.attempt}</td>
                <td class="error-text">
                  {d.http_status !== null && <strong>HTTP {d.http_status} </strong>}
                  {d.error ?? ''}
                </td>
                <td>
                  <time dateTime={d.dead_lettered_at} title={d.dead_lettered_at}>
                    {relative(d.dead_lettered_at)}
                  </time>
                </td>
                <td>
                  {d.replay_fire_id ? (
                    <span class="muted small">replayed as {d.replay_fire_id}</span>
                  ) : (
                    <button
                      type="button"
                      onClick={() => setConfirming([d.fire_id])}
                      aria-label={`Replay ${d.fire_id}`}
                    >
                      Replay
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {!list.loading && rows.length === 0 && !list.error && (
          <p class="empty">
            No dead letters{jobFilter ? ` for ${jobFilter}` : ''}: every fire either succeeded or is still
            retrying.
          </p>
        )}
      </div>
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={tokens.length <= 1} onClick={() => setTokens(tokens.slice(0, -1))}>
          ← Newer
        </button>
        <button
          type="button"
          disabled={!list.data?.next_page_token}
          onClick={() => list.data && setTokens([...tokens, list.data.next_page_token])}
        >
          Older →
        </button>
      </nav>
      <Confirm
        open={confirming !== null}
        title={`Replay ${confirming?.length ?? 0} dead letter${confirming?.length === 1 ? '' : 's'}?`}
        confirmLabel={`Replay ${confirming?.length ?? 0}`}
        onCancel={() => setConfirming(null)}
        onConfirm={() => confirming && void replay(confirming)}
      >
        <p>Each fires again now, with a new fence token; the receiver sees a new webhook-id.</p>
      </Confirm>
    </section>
  );
}
