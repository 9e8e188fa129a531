-- Label-wide control (bulk pause/resume/trigger/delete by label selector).
-- paused_until: a job paused "until" an instant; the scheduler owning its shard resumes it then
--   (the state is in the row, so a restart of any process still resumes it).
-- resume_catch_up: what a resume chose for the occurrences missed while paused
--   ({"missed": "SKIP|FIRE_ONCE|FIRE_ALL", "window_ms": n|null, "limit": n}); the scheduler's next
--   claim of the job plans them under it instead of the job's misfire policy, then clears it.
-- pause_resume: the catch-up choice and the pausing caller of a pause with until, used when the
--   scheduler resumes the job (and named in that resume's audit row).
ALTER TABLE jobs
  ADD COLUMN paused_until timestamptz,
  ADD COLUMN resume_catch_up jsonb,
  ADD COLUMN pause_resume jsonb;

-- The sweep's scan: only jobs paused with an until are in it (a few, usually).
CREATE INDEX jobs_paused_until_idx ON jobs (shard, paused_until) WHERE paused_until IS NOT NULL;
