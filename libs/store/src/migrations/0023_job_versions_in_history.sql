-- A job's history survives edits: every fire, skipped-occurrence record and run records the job
-- version (jobs.version, the etag's counter) it was planned under. NULL on rows written before
-- this migration: their version was not recorded.
ALTER TABLE fires ADD COLUMN job_version bigint;
ALTER TABLE occurrence_skips ADD COLUMN job_version bigint;
ALTER TABLE job_runs ADD COLUMN job_version bigint;

-- A run is the execution of one fire (same key), so it takes its fire's version. Done here, not by
-- the executors: they write runs from fire events, which do not carry the version, and every path
-- that inserts a run (first attempt, unleased fast path, retries) gets it alike.
CREATE FUNCTION job_runs_take_fire_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.job_version IS NULL THEN
    SELECT f.job_version INTO NEW.job_version
      FROM fires f
     WHERE f.job_id = NEW.job_id AND f.fence_token = NEW.fence_token;
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER job_runs_take_fire_version BEFORE INSERT ON job_runs
  FOR EACH ROW EXECUTE FUNCTION job_runs_take_fire_version();

-- The claim and the manual trigger write the version themselves (from the row they lock); these
-- take the job's current version for any writer that does not, so no new ledger row goes without.
-- The job row is locked by the writer's transaction, so its version is the one it planned with.
CREATE FUNCTION ledger_take_job_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.job_version IS NULL THEN
    SELECT j.version INTO NEW.job_version FROM jobs j WHERE j.job_id = NEW.job_id;
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER fires_take_job_version BEFORE INSERT ON fires
  FOR EACH ROW EXECUTE FUNCTION ledger_take_job_version();
CREATE TRIGGER occurrence_skips_take_job_version BEFORE INSERT ON occurrence_skips
  FOR EACH ROW EXECUTE FUNCTION ledger_take_job_version();
