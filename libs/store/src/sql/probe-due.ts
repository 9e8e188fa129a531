/**
 * The due probe: which tenants have due work, and which shards have outbox batches to relay, in
 * the shards the caller appears to hold — one statement, no transaction, no locks — so that an
 * idle tick (the common case) costs one round trip for all of an instance's lanes. The claim
 * re-checks the leases under a lock (claim-leases.ts) before touching anything.
 */
import type { DueProbe, DueProbeRequest, DueTenant } from '@tickwork/domain';
import type { Db } from './db';

const PROBE_DUE = `WITH RECURSIVE held AS (
  SELECT l.shard
    FROM shard_leases l
    JOIN unnest($1::int[], $2::bigint[]) AS o(shard, epoch) ON o.shard = l.shard AND o.epoch = l.epoch
   WHERE l.owner = $3 AND l.expires_at > now()
), t(shard, tenant_id) AS (
  -- A loose index scan over the tenants of each shard (one index probe per tenant).
  SELECT h.shard, (SELECT tenant_id FROM jobs WHERE shard = h.shard AND status = 'SCHEDULED' ORDER BY tenant_id LIMIT 1)
    FROM held h
  UNION ALL
  SELECT t.shard, (SELECT j.tenant_id FROM jobs j
                    WHERE j.shard = t.shard AND j.status = 'SCHEDULED' AND j.tenant_id > t.tenant_id
                    ORDER BY j.tenant_id LIMIT 1)
    FROM t WHERE t.tenant_id IS NOT NULL
)
SELECT now() AS db_now,
       ARRAY(SELECT shard FROM held) AS held,
       coalesce((
         SELECT json_agg(json_build_object('shard', t.shard, 'tenant_id', t.tenant_id))
           FROM t
          WHERE t.tenant_id IS NOT NULL
            -- One probe per tenant for a due row.
            AND EXISTS (SELECT 1 FROM jobs j
                         WHERE j.shard = t.shard AND j.tenant_id = t.tenant_id AND j.status = 'SCHEDULED'
                           AND j.next_run_at <= now() + make_interval(secs => $4::double precision / 1000))
       ), '[]'::json) AS due,
       ARRAY(SELECT h.shard FROM held h
              WHERE $5::double precision IS NOT NULL
                AND EXISTS (SELECT 1 FROM fire_batches b
                             WHERE b.shard = h.shard AND b.enqueued_at IS NULL
                               AND (b.trigger <> 'SCHEDULE'
                                    OR b.release_at <= now() - make_interval(secs => $5::double precision / 1000)))
       ) AS relay`;

/** Probes the shards of `req` for due tenants (and, with `relayAgeMs`, for batches to relay). */
export async function probeDue(db: Db, req: DueProbeRequest): Promise<DueProbe> {
  const { rows } = await db.query<{ db_now: Date; held: number[]; due: DueTenant[]; relay: number[] }>(
    PROBE_DUE,
    [
      req.shards.map((s) => s.shard),
      req.shards.map((s) => s.epoch),
      req.owner,
      req.lookaheadMs,
      req.relayAgeMs ?? null,
    ],
  );
  const row = rows[0]!;
  return { now: row.db_now, held: row.held, due: row.due, relay: row.relay };
}
