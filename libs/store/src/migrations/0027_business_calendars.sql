-- Tickwork store, version 27: business calendars.
-- business_calendars: named, versioned calendars of a tenant, or shared (tenant_id NULL, written by
--   admins); a tenant's own calendar of a name comes before a shared one of that name. Each write
--   bumps the version and keeps the version's definition in business_calendar_versions, so the
--   ledger's `name@version` can be looked up.
-- jobs.next_calendar_shift_ms: how far the job's calendar rule moved its next occurrence; the
--   schedule's own point is next_nominal_at − next_calendar_shift_ms.
-- fires.calendar_shift_ms / fires.calendar: a fire moved by a calendar (CALENDAR_SHIFT) and the
--   calendar that moved it; occurrence_skips.calendar: the calendar of a CALENDAR_SKIP.
CREATE TABLE business_calendars (
  tenant_id   text,
  name        text NOT NULL,
  version     bigint NOT NULL DEFAULT 1 CHECK (version > 0),
  definition  jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX business_calendars_name_uq ON business_calendars (coalesce(tenant_id, ''), name);

CREATE TABLE business_calendar_versions (
  tenant_id   text,
  name        text NOT NULL,
  version     bigint NOT NULL,
  definition  jsonb,
  recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX business_calendar_versions_uq ON business_calendar_versions (coalesce(tenant_id, ''), name, version);

ALTER TABLE jobs ADD COLUMN next_calendar_shift_ms bigint NOT NULL DEFAULT 0;
-- The jobs that refer to calendars, for the re-plan after a calendar changes.
CREATE INDEX jobs_calendars_idx ON jobs USING gin ((policies -> 'calendars')) WHERE policies ? 'calendars';

ALTER TABLE fires ADD COLUMN calendar_shift_ms bigint NOT NULL DEFAULT 0;
ALTER TABLE fires ADD COLUMN calendar text;
-- An occurrence is (instant, DST shift, calendar shift): Saturday's and Sunday's moved onto Monday
-- 09:00 and Monday's own are three fires at one instant.
CREATE UNIQUE INDEX fires_occurrence_calendar_uq ON fires (job_id, nominal_time, dst_shift_ms, calendar_shift_ms)
  WHERE trigger = 'SCHEDULE';
DROP INDEX fires_occurrence_shift_uq;

ALTER TABLE occurrence_skips ADD COLUMN calendar text;

-- fire_log was created with f.* (expanded when a view is made): made again so it shows the columns.
DROP VIEW IF EXISTS fire_log;
CREATE VIEW fire_log AS
SELECT f.*, b.enqueued_at
  FROM fires f
  JOIN fire_batches b ON b.batch_id = f.batch_id;
