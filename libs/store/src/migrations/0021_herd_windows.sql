-- Herd windows (policies.spread_ms): a fire runs at a slot inside [nominal, nominal + spread), and
-- its lateness is still measured from the nominal time. The slot's offset is recorded beside the
-- fire and its run, so the ledger and the lateness views can show both (scheduled_for is the slot;
-- scheduled_for - spread_offset_ms is the time lateness counts from). 0 for every other fire.
-- A constant default: PostgreSQL adds these columns without rewriting the tables.
ALTER TABLE fires ADD COLUMN IF NOT EXISTS spread_offset_ms bigint NOT NULL DEFAULT 0;
ALTER TABLE job_runs ADD COLUMN IF NOT EXISTS spread_offset_ms bigint NOT NULL DEFAULT 0;
-- fire_log was created with f.* (expanded when a view is made): made again so it shows the column.
DROP VIEW IF EXISTS fire_log;
CREATE VIEW fire_log AS
SELECT f.*, b.enqueued_at
  FROM fires f
  JOIN fire_batches b ON b.batch_id = f.batch_id;
