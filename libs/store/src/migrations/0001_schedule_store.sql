-- Tickwork schedule store, version 1.
-- jobs: the schedule of every job and the scheduler's state; fires: the outbox and fire log;
-- occurrence_skips: occurrences that did not fire and why; job_runs: the executor's run ledger;
-- shard_leases: which scheduler instance owns which shard, fenced by an epoch.

CREATE TABLE jobs (
  job_id          text PRIMARY KEY,
  tenant_id       text NOT NULL,
  shard           integer NOT NULL CHECK (shard >= 0),
  schedule_kind   text NOT NULL CHECK (schedule_kind IN ('once', 'interval', 'cron')),
  schedule        jsonb NOT NULL,
  time_zone       text NOT NULL DEFAULT 'UTC',
  status          text NOT NULL CHECK (status IN ('SCHEDULED', 'PAUSED', 'COMPLETED')),
  -- When the next occurrence is due to be claimed (its nominal time plus the job's jitter),
  -- and the nominal time itself.
  next_run_at     timestamptz,
  next_nominal_at timestamptz,
  fence_token     bigint NOT NULL DEFAULT 0,
  fires_count     bigint NOT NULL DEFAULT 0,
  last_fired_at   timestamptz,
  target          jsonb NOT NULL,
  payload         jsonb,
  policies        jsonb NOT NULL,
  labels          jsonb NOT NULL DEFAULT '{}'::jsonb,
  version         bigint NOT NULL DEFAULT 1,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  CHECK (status <> 'SCHEDULED' OR (next_run_at IS NOT NULL AND next_nominal_at IS NOT NULL))
);

-- The due-scan: only SCHEDULED rows are in it, so its size follows the live schedule. Keyed by
-- (shard, tenant, next_run_at) so the scan can walk the tenants of a shard (a loose index scan)
-- and take a fair share of each tenant's due rows; within a tenant it touches only due rows.
CREATE INDEX jobs_due_idx ON jobs (shard, tenant_id, next_run_at) WHERE status = 'SCHEDULED';
CREATE INDEX jobs_tenant_idx ON jobs (tenant_id, job_id);

-- One row per claimed occurrence. The primary key is the fire's identity; the unique
-- (job_id, nominal_time) guard makes a second claim of one occurrence fail loudly.
-- Rows with enqueued_at IS NULL are the outbox: claimed but not yet confirmed on Kafka.
CREATE TABLE fires (
  job_id          text NOT NULL,
  fence_token     bigint NOT NULL,
  tenant_id       text NOT NULL,
  shard           integer NOT NULL,
  nominal_time    timestamptz NOT NULL,
  scheduled_for   timestamptz NOT NULL,
  trigger         text NOT NULL DEFAULT 'SCHEDULE' CHECK (trigger IN ('SCHEDULE', 'MANUAL', 'REPLAY')),
  claimed_by      text NOT NULL,
  claimed_at      timestamptz NOT NULL DEFAULT now(),
  enqueued_at     timestamptz,
  event           jsonb NOT NULL,
  PRIMARY KEY (job_id, fence_token)
);
CREATE UNIQUE INDEX fires_occurrence_uq ON fires (job_id, nominal_time) WHERE trigger = 'SCHEDULE';
CREATE INDEX fires_outbox_idx ON fires (shard, claimed_at) WHERE enqueued_at IS NULL;
CREATE INDEX fires_claimed_at_idx ON fires (claimed_at);

-- Occurrences that were planned but not fired, as compact ranges with a reason.
CREATE TABLE occurrence_skips (
  id              bigserial PRIMARY KEY,
  job_id          text NOT NULL,
  tenant_id       text NOT NULL,
  reason          text NOT NULL,
  first_nominal   timestamptz NOT NULL,
  last_nominal    timestamptz NOT NULL,
  occurrences     bigint NOT NULL CHECK (occurrences > 0),
  recorded_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX occurrence_skips_job_idx ON occurrence_skips (job_id, first_nominal DESC);

-- The run ledger and the executor's idempotency key.
CREATE TABLE job_runs (
  job_id            text NOT NULL,
  fence_token       bigint NOT NULL,
  tenant_id         text NOT NULL,
  fire_id           text NOT NULL,
  nominal_time      timestamptz NOT NULL,
  scheduled_for     timestamptz NOT NULL,
  attempt           integer NOT NULL DEFAULT 1,
  status            text NOT NULL CHECK (status IN ('RUNNING', 'RETRYING', 'SUCCEEDED', 'DEAD_LETTERED', 'SKIPPED')),
  lease_owner       text,
  lease_token       uuid,
  lease_expires_at  timestamptz,
  started_at        timestamptz,
  finished_at       timestamptz,
  http_status       integer,
  error             text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, fence_token)
);
CREATE INDEX job_runs_job_recent_idx ON job_runs (job_id, created_at DESC);
CREATE INDEX job_runs_created_at_idx ON job_runs (created_at);

-- Shard ownership. Kafka's group assignment says who should own a shard; this row says who
-- does. Taking a shard bumps the epoch; every claim locks the row FOR SHARE and checks
-- owner, epoch and expiry, so a claim and a takeover cannot interleave.
CREATE TABLE shard_leases (
  shard           integer PRIMARY KEY CHECK (shard >= 0),
  owner           text,
  epoch           bigint NOT NULL DEFAULT 0,
  expires_at      timestamptz,
  updated_at      timestamptz NOT NULL DEFAULT now()
);
