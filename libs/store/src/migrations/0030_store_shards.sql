-- The store's shard map (TICKWORK_STORE_SHARDS): which database holds each shard's jobs, fires,
-- leases and runs. Only the DATABASE_URL database's rows count (every database is migrated alike,
-- so the table exists in all of them, empty in the shard databases). The first app to start with
-- an empty table writes its map; every app then checks its own map against these rows at boot and
-- refuses to start on a difference, so two apps never route one shard to two databases. A database
-- is recorded by identity (host:port/name), never by a URL that could carry a password.
CREATE TABLE store_shards (
  shard       integer PRIMARY KEY CHECK (shard >= 0),
  database    text NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now()
);
