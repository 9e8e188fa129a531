-- Tickwork store, version 6: the outbox is kept per claim batch, not per fire.
-- Confirming a fire used to update its fires row (a new version of a wide row and three index
-- entries per fire): the most expensive statement of the claim path. Fires are now claimed in
-- batches, one fire_batches row per (claim, shard); Kafka's acknowledgement of a batch is one
-- update of that row. A fire is in the outbox while its batch is not enqueued.
-- fires.claimed_at_idx was written on every claim and read by nothing: dropped.

CREATE TABLE fire_batches (
  batch_id     bigserial PRIMARY KEY,
  shard        integer NOT NULL,
  -- MANUAL and REPLAY batches have no claimer publishing them: the relay publishes them at once.
  trigger      text NOT NULL CHECK (trigger IN ('SCHEDULE', 'MANUAL', 'REPLAY')),
  claimed_by   text NOT NULL,
  claimed_at   timestamptz NOT NULL DEFAULT now(),
  fires        integer NOT NULL CHECK (fires > 0),
  enqueued_at  timestamptz
);
CREATE INDEX fire_batches_outbox_idx ON fire_batches (shard, claimed_at) WHERE enqueued_at IS NULL;

ALTER TABLE fires ADD COLUMN batch_id bigint;

-- Existing fires keep their exact state: one batch per (shard, trigger, claimer, enqueue time).
INSERT INTO fire_batches (shard, trigger, claimed_by, claimed_at, fires, enqueued_at)
SELECT shard, trigger, claimed_by, min(claimed_at), count(*), enqueued_at
  FROM fires
 GROUP BY shard, trigger, claimed_by, enqueued_at;
UPDATE fires f
   SET batch_id = b.batch_id
  FROM fire_batches b
 WHERE b.shard = f.shard AND b.trigger = f.trigger AND b.claimed_by = f.claimed_by
   AND b.enqueued_at IS NOT DISTINCT FROM f.enqueued_at;

DROP INDEX fires_outbox_idx;
DROP INDEX fires_claimed_at_idx;
ALTER TABLE fires DROP COLUMN enqueued_at;
ALTER TABLE fires ALTER COLUMN batch_id SET NOT NULL;
-- The relay reads a pending batch's fires; batch ids grow with time, so this index appends.
CREATE INDEX fires_batch_idx ON fires (batch_id);

-- The fire log as operators and the admin API read it: each fire with its enqueue time.
CREATE VIEW fire_log AS
SELECT f.*, b.enqueued_at
  FROM fires f
  JOIN fire_batches b ON b.batch_id = f.batch_id;
