-- The console's lateness view and cluster page read the ledgers by time and count the runs in
-- flight; without these each would scan job_runs or occurrence_skips whole.

-- Runs by creation time, for lateness over the last hour or day. BRIN, not a btree: every fire
-- inserts a run and updates it once (never a HOT update, see 0007), and a BRIN index costs next
-- to nothing on either write; runs are created in time order, so block ranges follow time.
CREATE INDEX job_runs_created_brin ON job_runs USING brin (created_at) WITH (pages_per_range = 32);
-- Skipped occurrences of a tenant, or of all tenants, over a window (skips are rare writes).
CREATE INDEX occurrence_skips_tenant_idx ON occurrence_skips (tenant_id, first_nominal DESC);
CREATE INDEX occurrence_skips_first_nominal_idx ON occurrence_skips (first_nominal DESC);
-- Runs in flight per executor. Only unfinished runs are in it: one index entry per run, made
-- when it starts (its final update leaves the partial index and adds nothing).
CREATE INDEX job_runs_in_flight_idx ON job_runs (lease_owner) WHERE status IN ('RUNNING', 'RETRYING');
