-- rrule schedules (RFC 5545 recurrence rules): a fourth schedule kind.
ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_schedule_kind_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_schedule_kind_check
  CHECK (schedule_kind IN ('once', 'interval', 'cron', 'rrule'));
