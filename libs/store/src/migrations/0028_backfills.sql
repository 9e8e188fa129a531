-- Backfills: "run the occurrences of this job between A and B that did not run". A backfill is
-- planned when it is requested (its items: the occurrences the ledger says did not run) and fired,
-- paced, by the scheduler holding the job's shard, each item as a fire with trigger BACKFILL and
-- the occurrence's nominal time.

-- A backfill fire is a fire of its occurrence: one guard for scheduled and backfill fires, so an
-- occurrence fires at most once whichever path comes first (a second backfill of the same window,
-- a scheduler taking a backfill over after a crash, a resume catching up what a backfill fired).
-- The claim's ON CONFLICT (…) WHERE trigger = 'SCHEDULE' infers this index (its predicate implies it).
-- An occurrence is (instant, DST shift, calendar shift), as 0027 made it for scheduled fires.
ALTER TABLE fires DROP CONSTRAINT fires_trigger_check;
ALTER TABLE fires ADD CONSTRAINT fires_trigger_check CHECK (trigger IN ('SCHEDULE', 'MANUAL', 'REPLAY', 'BACKFILL'));
ALTER TABLE fire_batches DROP CONSTRAINT fire_batches_trigger_check;
ALTER TABLE fire_batches ADD CONSTRAINT fire_batches_trigger_check CHECK (trigger IN ('SCHEDULE', 'MANUAL', 'REPLAY', 'BACKFILL'));
CREATE UNIQUE INDEX fires_occurrence_fired_uq ON fires (job_id, nominal_time, dst_shift_ms, calendar_shift_ms)
  WHERE trigger IN ('SCHEDULE', 'BACKFILL');
DROP INDEX fires_occurrence_calendar_uq;

CREATE TABLE backfills (
  backfill_id     bigserial PRIMARY KEY,
  tenant_id       text NOT NULL,
  job_id          text NOT NULL,
  -- The job's shard: its owner fires the backfill, fenced by the shard lease like a claim.
  shard           integer NOT NULL,
  window_from     timestamptz NOT NULL,
  window_to       timestamptz NOT NULL CHECK (window_to > window_from),
  max_per_second  double precision NOT NULL CHECK (max_per_second > 0),
  skip_reasons    text[] NOT NULL,
  status          text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'RUNNING', 'CANCELLED', 'DONE', 'FAILED')),
  -- Occurrences planned to fire (the items), fired so far, and found fired when their turn came.
  planned         integer NOT NULL CHECK (planned >= 0),
  fired           integer NOT NULL DEFAULT 0,
  found_ran       integer NOT NULL DEFAULT 0,
  -- What the plan left out: occurrences of the window that had run, and skipped ones by reason.
  already_ran     integer NOT NULL DEFAULT 0,
  excluded        jsonb NOT NULL DEFAULT '{}',
  -- The pace's next slot: a scheduler taking the backfill over keeps its pace.
  next_fire_at    timestamptz NOT NULL DEFAULT now(),
  created_by      text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  started_at      timestamptz,
  finished_at     timestamptz,
  cancelled_by    text,
  failure         text,
  updated_at      timestamptz NOT NULL DEFAULT now()
);
-- The scheduler's scan: active backfills of its shards.
CREATE INDEX backfills_active_idx ON backfills (shard, next_fire_at) WHERE status IN ('PENDING', 'RUNNING');
CREATE INDEX backfills_job_idx ON backfills (job_id, backfill_id DESC);
CREATE INDEX backfills_tenant_idx ON backfills (tenant_id, backfill_id DESC);

-- One row per planned occurrence, fired in seq (nominal) order.
CREATE TABLE backfill_items (
  backfill_id   bigint NOT NULL REFERENCES backfills (backfill_id) ON DELETE CASCADE,
  seq           integer NOT NULL,
  nominal_time  timestamptz NOT NULL,
  dst_shift_ms  integer NOT NULL DEFAULT 0,
  -- A business calendar's move (nominal_time is the moved instant) and the calendar, name@version.
  calendar_shift_ms bigint NOT NULL DEFAULT 0,
  calendar      text,
  reason        text NOT NULL,
  -- PLANNED: not fired yet; FIRED: its fire is fence_token; ALREADY_RAN: the occurrence had fired
  -- by then (a concurrent backfill or claim), so it was not fired again.
  state         text NOT NULL DEFAULT 'PLANNED' CHECK (state IN ('PLANNED', 'FIRED', 'ALREADY_RAN')),
  fence_token   bigint,
  PRIMARY KEY (backfill_id, seq)
);
CREATE INDEX backfill_items_planned_idx ON backfill_items (backfill_id, seq) WHERE state = 'PLANNED';
