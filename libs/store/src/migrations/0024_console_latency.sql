-- Tickwork store, version 24: the console's all-tenant dead-letter page at 1M jobs.
-- An admin's page of every tenant's dead letters, newest first, read the whole DEAD_LETTERED
-- part of the run ledger through job_runs_dead_letters_idx (tenant first) and sorted it: every
-- page cost all the dead letters. This index is in the page's order (the keyset cursor is
-- (updated_at, job_id, fence_token)), so a page reads its own rows and stops. Partial, like the
-- tenant one: a run enters it only when it is dead-lettered, so the run ledger's write path
-- (RUNNING → SUCCEEDED) does not pay for it.
CREATE INDEX job_runs_dead_lettered_recent_idx ON job_runs (updated_at DESC, job_id DESC, fence_token DESC)
  WHERE status = 'DEAD_LETTERED';
