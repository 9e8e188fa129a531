-- Why a run was dead-lettered, in a column of its own: the executor that finds a dead-lettered run
-- not yet handed off (a crash between recording it and producing its dead letter) produces the
-- dead letter with this reason, instead of parsing it back out of `error` ("REASON: detail",
-- which `error` keeps for the runs' views). Older rows: the reason that leads their error.
ALTER TABLE job_runs ADD COLUMN dead_letter_reason text;

UPDATE job_runs
   SET dead_letter_reason = substring(error FROM '^([A-Z_]+): ')
 WHERE status = 'DEAD_LETTERED' AND error ~ '^[A-Z_]+: ';
