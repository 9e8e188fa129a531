-- The console's lateness view and cluster page read the ledgers by time and count the runs in
-- flight; without these each would scan job_runs or occurrence_skips whole.

-- A tenant's finished runs by creation time, for its lateness over the last hour or day (all
-- tenants' use job_runs_finished_purge_idx). Partial, like that one: a run enters it once, with
-- its final update; starting a run adds nothing to it (0007 keeps the run ledger's write path
-- free of indexes it does not need).
CREATE INDEX job_runs_tenant_finished_idx ON job_runs (tenant_id, created_at)
  WHERE status IN ('SUCCEEDED', 'DEAD_LETTERED', 'SKIPPED');
-- Skipped occurrences of a tenant, or of all tenants, over a window (skips are rare writes).
CREATE INDEX occurrence_skips_tenant_idx ON occurrence_skips (tenant_id, first_nominal DESC);
CREATE INDEX occurrence_skips_first_nominal_idx ON occurrence_skips (first_nominal DESC);
-- Runs in flight per executor. Only unfinished runs are in it: one index entry per run, made
-- when it starts (its final update leaves the partial index and adds nothing).
CREATE INDEX job_runs_in_flight_idx ON job_runs (lease_owner) WHERE status IN ('RUNNING', 'RETRYING');
