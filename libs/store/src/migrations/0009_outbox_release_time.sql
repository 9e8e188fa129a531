-- Tickwork store, version 9: an outbox batch records when it is due on Kafka.
-- With a lookahead, a claimer holds a batch claimed ahead until its fires' time. The relay took
-- any batch older than the relay age (from its claim) as orphaned, so the lookahead had to stay
-- shorter than the relay age or a next owner would publish fires early. The relay now counts the
-- relay age from `release_at`: the later of the claim and the batch's latest scheduled time. A
-- lookahead can be as long as a herd needs, and a relay still never publishes a fire early.
-- The outbox gauge reads it too: a batch held for its time is not overdue.
-- Batches that already are in the outbox were claimed without a lookahead beyond the relay age:
-- their claim time is their release time. For confirmed batches the column is the time of this
-- migration; nothing reads it once a batch is confirmed.
ALTER TABLE fire_batches ADD COLUMN release_at timestamptz NOT NULL DEFAULT now();
UPDATE fire_batches SET release_at = claimed_at WHERE enqueued_at IS NULL;
