-- The run ledger learns retries and hand-offs.
-- next_attempt_at: when a RETRYING run's next attempt may start (the not-before of its retry message).
-- handed_off_at: when the message that carries the run on (the retry message of a RETRYING run, the
-- dead letter of a DEAD_LETTERED one) was acknowledged by Kafka. The run is recorded first, under
-- its lease, and handed off second; a re-delivery that finds it recorded but not handed off
-- produces the hand-off again, so a crash between the two loses nothing and a late write by a
-- fenced-out executor produces nothing.
ALTER TABLE job_runs ADD COLUMN next_attempt_at timestamptz;
ALTER TABLE job_runs ADD COLUMN handed_off_at timestamptz;

-- The retention purge deletes finished runs oldest first in small batches; this index lets each
-- batch find them without scanning live rows.
CREATE INDEX job_runs_finished_purge_idx ON job_runs (created_at) WHERE status IN ('SUCCEEDED', 'DEAD_LETTERED', 'SKIPPED');
