-- Tickwork store, version 24: the console's slowest reads at 1M jobs (bench/console.ts).
--
-- 1. An admin's page of every tenant's dead letters, newest first, read the whole DEAD_LETTERED
--    part of the run ledger through job_runs_dead_letters_idx (tenant first) and sorted it: every
--    page cost all the dead letters. This index is in the page's order (the keyset cursor is
--    (updated_at, job_id, fence_token)), so a page reads its own rows and stops. Partial: a run
--    enters it only when it is dead-lettered.
CREATE INDEX job_runs_dead_lettered_recent_idx ON job_runs (updated_at DESC, job_id DESC, fence_token DESC)
  WHERE status = 'DEAD_LETTERED';

-- 2. Lateness reads up to 8,000 finished runs of a window (a tenant's, or all tenants') for its
--    percentiles: a heap fetch per run, scattered over the ledger. The two partial indexes it
--    reads through now carry the columns it needs, so the sample is an index-only scan (on pages
--    the visibility map marks all-visible: all but the newest, until autovacuum reaches them).
--    Same names, same predicate, same one entry per run made at its final update: the run
--    ledger's write path makes no more index entries than before, only wider ones.
DROP INDEX job_runs_tenant_finished_idx;
CREATE INDEX job_runs_tenant_finished_idx ON job_runs (tenant_id, created_at)
  INCLUDE (job_id, status, attempt, scheduled_for, started_at)
  WHERE status IN ('SUCCEEDED', 'DEAD_LETTERED', 'SKIPPED');
DROP INDEX job_runs_finished_purge_idx;
CREATE INDEX job_runs_finished_purge_idx ON job_runs (created_at)
  INCLUDE (job_id, tenant_id, status, attempt, scheduled_for, started_at)
  WHERE status IN ('SUCCEEDED', 'DEAD_LETTERED', 'SKIPPED');
