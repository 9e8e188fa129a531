-- dst_gap SHIFT can move a wall time in a spring-forward gap onto an instant that already has an
-- occurrence of the same job (02:45 → 03:45 EDT, where 03:45 also fires). Both are occurrences:
-- an occurrence is (nominal instant, DST shift), the shift being how far SHIFT moved it (the gap's
-- length; 0 when it was not moved).

-- The schedule's cursor: next_nominal_at alone cannot say which of two occurrences at one instant is next.
ALTER TABLE jobs ADD COLUMN next_dst_shift_ms integer NOT NULL DEFAULT 0 CHECK (next_dst_shift_ms >= 0);

-- A scheduled fire's occurrence, and the guard against claiming one twice, include the shift.
ALTER TABLE fires ADD COLUMN dst_shift_ms integer NOT NULL DEFAULT 0 CHECK (dst_shift_ms >= 0);
CREATE UNIQUE INDEX fires_occurrence_shift_uq ON fires (job_id, nominal_time, dst_shift_ms) WHERE trigger = 'SCHEDULE';
DROP INDEX fires_occurrence_uq;
