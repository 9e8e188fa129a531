-- idempotency_keys: CreateJob calls made with an idempotency key (REST Idempotency-Key, gRPC
--   idempotency_key), per tenant, so a client that retries after a timeout gets the job its first
--   call created instead of a duplicate. request_sha256 is the request's canonical JSON hash: the
--   same key with another request is refused. Rows older than the retention (24 h) no longer
--   count and are purged by later creates.
CREATE TABLE idempotency_keys (
  tenant_id       text NOT NULL,
  idempotency_key text NOT NULL,
  request_sha256  text NOT NULL,
  job_id          text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, idempotency_key)
);
CREATE INDEX idempotency_keys_created_at_idx ON idempotency_keys (created_at);

-- A refused call without a valid token is audited too; its actor is 'anonymous' with that role.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_role_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_role_check CHECK (role IN ('tenant', 'admin', 'anonymous'));
