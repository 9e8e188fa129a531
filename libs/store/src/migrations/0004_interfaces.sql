-- Tickwork store, version 4: what the public interfaces need.
-- audit_events: who changed what, when, through which interface, and how it ended.
-- applied_commands: Kafka schedule commands already applied (dedupe by tenant + command_id).
-- job_tombstones: the last fence token of deleted jobs, so a re-created job id never reuses a
--   fence token (the executor's ledger would take the new fire for a duplicate).
-- dead_letter_replays: each dead-lettered fire is replayed at most once.

CREATE TABLE audit_events (
  id          bigserial PRIMARY KEY,
  at          timestamptz NOT NULL DEFAULT now(),
  actor       text NOT NULL,
  role        text NOT NULL CHECK (role IN ('tenant', 'admin')),
  via         text NOT NULL CHECK (via IN ('grpc', 'rest', 'kafka')),
  action      text NOT NULL,
  tenant_id   text,
  job_id      text,
  outcome     text NOT NULL,
  details     jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_events_tenant_idx ON audit_events (tenant_id, at DESC);
CREATE INDEX audit_events_job_idx ON audit_events (job_id, at DESC);

CREATE TABLE applied_commands (
  tenant_id     text NOT NULL,
  command_id    text NOT NULL,
  job_id        text NOT NULL,
  command_type  text NOT NULL,
  applied_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, command_id)
);
CREATE INDEX applied_commands_applied_at_idx ON applied_commands (applied_at);

CREATE TABLE job_tombstones (
  job_id       text PRIMARY KEY,
  tenant_id    text NOT NULL,
  fence_token  bigint NOT NULL,
  deleted_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE dead_letter_replays (
  job_id               text NOT NULL,
  fence_token          bigint NOT NULL,
  replay_fence_token   bigint NOT NULL,
  replayed_by          text NOT NULL,
  replayed_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, fence_token)
);

-- ListJobs filters by labels; ListDeadLetters reads dead-lettered runs newest first.
CREATE INDEX jobs_labels_idx ON jobs USING gin (labels jsonb_path_ops);
CREATE INDEX job_runs_dead_letters_idx ON job_runs (tenant_id, updated_at DESC) WHERE status = 'DEAD_LETTERED';
