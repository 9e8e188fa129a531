-- Tickwork store, version 7: a lighter write path for the run ledger.
-- Every fire inserts a job_runs row and updates it once (RUNNING → final). The update changes
-- `status`, a column in the predicates of the partial indexes, so it is never a HOT update: each
-- index costs an index insert on both writes. Two indexes had no reader:
-- - job_runs_job_recent_idx (job_id, created_at DESC): a job's runs are listed by fence token,
--   which the primary key (job_id, fence_token) serves;
-- - job_runs_created_at_idx (created_at): the retention purge uses job_runs_finished_purge_idx
--   (created_at, finished runs only).
DROP INDEX IF EXISTS job_runs_job_recent_idx;
DROP INDEX IF EXISTS job_runs_created_at_idx;
