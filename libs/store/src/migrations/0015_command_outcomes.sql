-- Tickwork store, version 15: every Kafka command with a valid (tenant_id, command_id) has one
-- outcome, kept in applied_commands: APPLIED, or the reject code it was refused with. A refused
-- command delivered again (a scheduler restarted before committing its offset, a forwarded copy
-- sent twice) is then a duplicate: it cannot take effect after the commands that followed it.
ALTER TABLE applied_commands
  ADD COLUMN outcome text NOT NULL DEFAULT 'APPLIED',
  ADD COLUMN reason  text;
