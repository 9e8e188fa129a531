-- The console's lateness view and cluster page read the ledgers by tenant and time, and count the
-- runs in flight; without these each would scan job_runs or occurrence_skips whole.

-- Lateness of one tenant over the last hour or day (newest first, bounded).
CREATE INDEX job_runs_tenant_created_idx ON job_runs (tenant_id, created_at DESC);
-- Skipped occurrences of a tenant, or of all tenants, over a window.
CREATE INDEX occurrence_skips_tenant_idx ON occurrence_skips (tenant_id, first_nominal DESC);
CREATE INDEX occurrence_skips_first_nominal_idx ON occurrence_skips (first_nominal DESC);
-- Runs in flight per executor: only unfinished runs are in it, so it stays small.
CREATE INDEX job_runs_in_flight_idx ON job_runs (lease_owner) WHERE status IN ('RUNNING', 'RETRYING');
