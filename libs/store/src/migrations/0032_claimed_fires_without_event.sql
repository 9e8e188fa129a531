-- A fire claimed by the schedule no longer copies its job's target and payload into `event`: its
-- event is its own columns and its job's target and payload, read back when needed (the outbox
-- relay after a crash, a dead-letter replay; fireEventOfRow in libs/domain fire-snapshot.ts).
-- The copy was 15 % of the claim's statement and most of a fire row's bytes. Manual, replayed,
-- backfilled and bulk fires still store their whole event.
ALTER TABLE fires ALTER COLUMN event DROP NOT NULL;

-- When a job's target or payload changes, or the job is deleted, its fires that may still be
-- read keep the pair they were claimed with: it is frozen into `event` (as {target, payload})
-- in the same transaction. "May still be read": the batch is not confirmed on Kafka (the relay
-- may publish it), or the run did not end in SUCCEEDED or SKIPPED (a dead letter can be
-- replayed; a fire with no run yet is still on its way). A claim's UPDATE sets neither column,
-- so it never fires this trigger.
CREATE FUNCTION freeze_claimed_fire_events() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE fires f
     SET event = jsonb_build_object('target', OLD.target, 'payload', OLD.payload)
   WHERE f.job_id = OLD.job_id
     AND f.event IS NULL
     AND (NOT EXISTS (SELECT 1 FROM job_runs r
                       WHERE r.job_id = f.job_id AND r.fence_token = f.fence_token
                         AND r.status IN ('SUCCEEDED', 'SKIPPED'))
          OR EXISTS (SELECT 1 FROM fire_batches b WHERE b.batch_id = f.batch_id AND b.enqueued_at IS NULL));
  RETURN NULL;
END $$;

CREATE TRIGGER jobs_freeze_fire_events_on_change
  AFTER UPDATE OF target, payload ON jobs
  FOR EACH ROW
  WHEN (OLD.target IS DISTINCT FROM NEW.target OR OLD.payload IS DISTINCT FROM NEW.payload)
  EXECUTE FUNCTION freeze_claimed_fire_events();

CREATE TRIGGER jobs_freeze_fire_events_on_delete
  AFTER DELETE ON jobs
  FOR EACH ROW
  EXECUTE FUNCTION freeze_claimed_fire_events();
