/** Cluster (admins): shard owners, epochs and leases, due backlog and outbox per shard, consumer lag, executors. */
import { useEffect } from 'preact/hooks';
import { call } from '../api';
import { instantInWords, relative, viewerZone } from '../format';
import { ErrorBox, useLoad, type Ctx } from '../ui';

interface Cluster {
  shards: {
    shard: number;
    owner: string | null;
    epoch: number;
    lease_expires_at: string | null;
    due: number;
    oldest_due_age_seconds: number;
    outbox_pending: number;
    outbox_oldest_age_seconds: number;
  }[];
  executors: { owner: string; running: number; retrying: number }[];
  consumer_lag: { group: string; topic: string; lag: number | null; partitions: number; error?: string }[];
  observed_at: string;
}

const secs = (s: number): string =>
  s <= 0 ? '—' : s < 60 ? `${s.toFixed(1)} s` : `${(s / 60).toFixed(1)} min`;

export function ClusterView(props: { ctx: Ctx }) {
  const c = useLoad(() => call<Cluster>('GET', '/v1/cluster').then((r) => r.body), [props.ctx.me.actor]);
  useEffect(() => {
    const t = setInterval(c.reload, 5000);
    return () => clearInterval(t);
  }, []);
  const d = c.data;
  const now = d ? new Date(d.observed_at).getTime() : Date.now();
  return (
    <section aria-labelledby="cluster-title">
      <h1 id="cluster-title">Cluster</h1>
      <p class="muted">
        Refreshes every 5 s{d ? `; observed ${instantInWords(d.observed_at, viewerZone())}` : ''}.
      </p>
      <ErrorBox error={c.error} />
      {d && (
        <>
          <div class="cards">
            <div class="stat">
              <span class="n">
                {
                  d.shards.filter(
                    (s) => s.owner && s.lease_expires_at && new Date(s.lease_expires_at).getTime() > now,
                  ).length
                }
              </span>
              <span>of {d.shards.length} shards owned</span>
            </div>
            <div class="stat">
              <span class="n">{d.shards.reduce((a, s) => a + s.due, 0)}</span>
              <span>due, not yet claimed</span>
            </div>
            <div class="stat">
              <span class="n">{d.shards.reduce((a, s) => a + s.outbox_pending, 0)}</span>
              <span>fires in the outbox</span>
            </div>
            <div class="stat">
              <span class="n">{d.executors.reduce((a, e) => a + e.running, 0)}</span>
              <span>runs in flight</span>
            </div>
          </div>
          <div class="grid">
            <section class="card" aria-labelledby="lag-title">
              <h2 id="lag-title">Consumer lag</h2>
              <table>
                <thead>
                  <tr>
                    <th scope="col">Group</th>
                    <th scope="col">Topic</th>
                    <th scope="col" class="num">
                      Lag
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.consumer_lag.map((l) => (
                    <tr key={l.group}>
                      <td class="mono">{l.group}</td>
                      <td class="mono">
                        {l.topic} <span class="muted small">({l.partitions} partitions)</span>
                      </td>
                      <td class="num">{l.lag ?? <span class="error-text">{l.error ?? 'unknown'}</span>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </section>
            <section class="card" aria-labelledby="exec-title">
              <h2 id="exec-title">Executors: runs in flight</h2>
              {d.executors.length === 0 ? (
                <p class="empty">No run is in flight right now.</p>
              ) : (
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Executor</th>
                      <th scope="col" class="num">
                        Running
                      </th>
                      <th scope="col" class="num">
                        Retrying
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.executors.map((e) => (
                      <tr key={e.owner}>
                        <td class="mono">{e.owner}</td>
                        <td class="num">{e.running}</td>
                        <td class="num">{e.retrying}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </section>
          </div>
          <section class="card" aria-labelledby="shards-title">
            <h2 id="shards-title">Shards</h2>
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col" class="num">
                      Shard
                    </th>
                    <th scope="col">Owner</th>
                    <th scope="col" class="num">
                      Epoch
                    </th>
                    <th scope="col">Lease expires</th>
                    <th scope="col" class="num">
                      Due backlog
                    </th>
                    <th scope="col" class="num">
                      Oldest due
                    </th>
                    <th scope="col" class="num">
                      Outbox
                    </th>
                    <th scope="col" class="num">
                      Outbox oldest
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.shards.map((s) => {
                    const expired = !s.lease_expires_at || new Date(s.lease_expires_at).getTime() <= now;
                    return (
                      <tr key={s.shard}>
                        <td class="num">{s.shard}</td>
                        <td class="mono">{s.owner ?? <span class="muted">unowned</span>}</td>
                        <td class="num">{s.epoch}</td>
                        <td>
                          {s.lease_expires_at ? (
                            <span class={expired ? 'error-text' : ''}>
                              {expired ? 'expired ' : ''}
                              {relative(s.lease_expires_at, now)}
                            </span>
                          ) : (
                            <span class="muted">never leased</span>
                          )}
                        </td>
                        <td class="num">{s.due}</td>
                        <td class="num">{secs(s.oldest_due_age_seconds)}</td>
                        <td class="num">{s.outbox_pending}</td>
                        <td class="num">{secs(s.outbox_oldest_age_seconds)}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          </section>
        </>
      )}
    </section>
  );
}
