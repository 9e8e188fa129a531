-- Tickwork store, version 22: fire SLOs. The scheduler owning a shard judges each scheduled fire of
-- it once its run started or its deadline passed: on time (nothing recorded), LATE (started later
-- than the job's tolerance after its nominal time) or MISSED (not started by the next occurrence,
-- or by TICKWORK_SLO_MISSED_AFTER_MS). The verdicts join the occurrence ledger.

-- One verdict per fire, ever: the primary key makes a sweep repeated after a crash a no-op.
CREATE TABLE occurrence_slo (
  job_id        text NOT NULL,
  fence_token   bigint NOT NULL,
  tenant_id     text NOT NULL,
  nominal_time  timestamptz NOT NULL,
  reason        text NOT NULL CHECK (reason IN ('LATE', 'MISSED')),
  -- First start − nominal time; null for a MISSED occurrence that had not started when judged.
  lateness_ms   bigint CHECK (lateness_ms IS NULL OR lateness_ms >= 0),
  tolerance_ms  bigint NOT NULL CHECK (tolerance_ms >= 0),
  deadline_at   timestamptz NOT NULL,
  recorded_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, fence_token)
);
-- The fire-log retention purge deletes the oldest verdicts with the fires they judged.
CREATE INDEX occurrence_slo_recorded_idx ON occurrence_slo (recorded_at);

-- How far each shard's scheduled batches have been looked at: every SCHEDULE batch of the shard
-- below next_batch_id was judged, or its undecided fires are in slo_watch. Batch ids grow with
-- time, and one shard's batches are claimed one after another by its single owner.
CREATE TABLE slo_sweep_marks (
  shard          integer PRIMARY KEY CHECK (shard >= 0),
  next_batch_id  bigint NOT NULL,
  swept_at       timestamptz NOT NULL DEFAULT now()
);
-- Where a shard's first sweep starts: batches claimed before this version are not judged (their
-- runs may be purged, and their tolerance was never promised).
CREATE TABLE slo_sweep_floor (
  only_row       boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  next_batch_id  bigint NOT NULL
);
INSERT INTO slo_sweep_floor (next_batch_id) SELECT COALESCE(max(batch_id), 0) + 1 FROM fire_batches;

-- Fires looked at before they could be judged (not started, deadline ahead): few while executors
-- keep up, so each sweep re-reads them cheaply.
CREATE TABLE slo_watch (
  job_id        text NOT NULL,
  fence_token   bigint NOT NULL,
  tenant_id     text NOT NULL,
  shard         integer NOT NULL,
  nominal_time  timestamptz NOT NULL,
  tolerance_ms  bigint NOT NULL,
  deadline_at   timestamptz NOT NULL,
  PRIMARY KEY (job_id, fence_token)
);
CREATE INDEX slo_watch_shard_idx ON slo_watch (shard, deadline_at);

-- The sweep walks a shard's batches in id order (one row per claim batch, so this index is small).
CREATE INDEX fire_batches_shard_idx ON fire_batches (shard, batch_id) WHERE trigger = 'SCHEDULE';

-- Jobs that opted in to per-job SLO metrics, by shard: the dead-man gauge reads only these.
CREATE INDEX jobs_slo_metrics_idx ON jobs (shard) WHERE (policies ->> 'slo_metrics') = 'true';
