-- Executor liveness: each executor process beats once a second, so a run leased by a process that
-- died (kill -9, a lost host) can be taken over seconds after its death instead of when its lease
-- expires (TICKWORK_RUN_LEASE_MS, 30 s by default): a restarted executor, or the one its partitions
-- move to, no longer waits out a dead process's leases (docs/executor.md, "Membership changes").
--
-- issuer: the process's lease-token prefix (the first 18 characters of every lease token it
-- issues). live_since: the start of its unbroken run of beats (no gap over the continuity limit):
-- a process beating since before another's last beat proves the database was reachable all the
-- while, so the other's silence is its own, not a database outage's.
CREATE TABLE executor_liveness (
  issuer text PRIMARY KEY,
  instance_id text NOT NULL,
  live_since timestamptz NOT NULL,
  beat_at timestamptz NOT NULL
);
