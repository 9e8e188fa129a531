-- The PostgreSQL schema after every migration in libs/store/src/migrations (pg_dump --schema-only,
-- normalised). Generated: regenerate with `npm run schema:dump`; do not edit.

--
-- PostgreSQL database dump
--

--
-- Name: freeze_claimed_fire_events(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.freeze_claimed_fire_events() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

--
-- Name: job_runs_take_fire_version(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.job_runs_take_fire_version() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF NEW.job_version IS NULL THEN
    SELECT f.job_version INTO NEW.job_version
      FROM fires f
     WHERE f.job_id = NEW.job_id AND f.fence_token = NEW.fence_token;
  END IF;
  RETURN NEW;
END
$$;

--
-- Name: ledger_take_job_version(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ledger_take_job_version() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF NEW.job_version IS NULL THEN
    SELECT j.version INTO NEW.job_version FROM jobs j WHERE j.job_id = NEW.job_id;
  END IF;
  RETURN NEW;
END
$$;

--
-- Name: applied_commands; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.applied_commands (
    tenant_id text NOT NULL,
    command_id text NOT NULL,
    job_id text NOT NULL,
    command_type text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    outcome text DEFAULT 'APPLIED'::text NOT NULL,
    reason text
);

--
-- Name: audit_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.audit_events (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    actor text NOT NULL,
    role text NOT NULL,
    via text NOT NULL,
    action text NOT NULL,
    tenant_id text,
    job_id text,
    outcome text NOT NULL,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT audit_events_role_check CHECK ((role = ANY (ARRAY['tenant'::text, 'admin'::text, 'anonymous'::text]))),
    CONSTRAINT audit_events_via_check CHECK ((via = ANY (ARRAY['grpc'::text, 'rest'::text, 'kafka'::text])))
);

--
-- Name: audit_events_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.audit_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: audit_events_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.audit_events_id_seq OWNED BY public.audit_events.id;

--
-- Name: backfill_items; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.backfill_items (
    backfill_id bigint NOT NULL,
    seq integer NOT NULL,
    nominal_time timestamp with time zone NOT NULL,
    dst_shift_ms integer DEFAULT 0 NOT NULL,
    calendar_shift_ms bigint DEFAULT 0 NOT NULL,
    calendar text,
    reason text NOT NULL,
    state text DEFAULT 'PLANNED'::text NOT NULL,
    fence_token bigint,
    CONSTRAINT backfill_items_state_check CHECK ((state = ANY (ARRAY['PLANNED'::text, 'FIRED'::text, 'ALREADY_RAN'::text])))
);

--
-- Name: backfills; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.backfills (
    backfill_id bigint NOT NULL,
    tenant_id text NOT NULL,
    job_id text NOT NULL,
    shard integer NOT NULL,
    window_from timestamp with time zone NOT NULL,
    window_to timestamp with time zone NOT NULL,
    max_per_second double precision NOT NULL,
    skip_reasons text[] NOT NULL,
    status text DEFAULT 'PENDING'::text NOT NULL,
    planned integer NOT NULL,
    fired integer DEFAULT 0 NOT NULL,
    found_ran integer DEFAULT 0 NOT NULL,
    already_ran integer DEFAULT 0 NOT NULL,
    excluded jsonb DEFAULT '{}'::jsonb NOT NULL,
    next_fire_at timestamp with time zone DEFAULT now() NOT NULL,
    created_by text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    cancelled_by text,
    failure text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT backfills_check CHECK ((window_to > window_from)),
    CONSTRAINT backfills_max_per_second_check CHECK ((max_per_second > (0)::double precision)),
    CONSTRAINT backfills_planned_check CHECK ((planned >= 0)),
    CONSTRAINT backfills_status_check CHECK ((status = ANY (ARRAY['PENDING'::text, 'RUNNING'::text, 'CANCELLED'::text, 'DONE'::text, 'FAILED'::text])))
);

--
-- Name: backfills_backfill_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.backfills_backfill_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: backfills_backfill_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.backfills_backfill_id_seq OWNED BY public.backfills.backfill_id;

--
-- Name: business_calendar_versions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.business_calendar_versions (
    tenant_id text,
    name text NOT NULL,
    version bigint NOT NULL,
    definition jsonb,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: business_calendars; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.business_calendars (
    tenant_id text,
    name text NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    definition jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT business_calendars_version_check CHECK ((version > 0))
);

--
-- Name: dead_letter_replays; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dead_letter_replays (
    job_id text NOT NULL,
    fence_token bigint NOT NULL,
    replay_fence_token bigint NOT NULL,
    replayed_by text NOT NULL,
    replayed_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: executor_liveness; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.executor_liveness (
    issuer text NOT NULL,
    instance_id text NOT NULL,
    live_since timestamp with time zone NOT NULL,
    beat_at timestamp with time zone NOT NULL
);

--
-- Name: fire_batches; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.fire_batches (
    batch_id bigint NOT NULL,
    shard integer NOT NULL,
    trigger text NOT NULL,
    claimed_by text NOT NULL,
    claimed_at timestamp with time zone DEFAULT now() NOT NULL,
    fires integer NOT NULL,
    enqueued_at timestamp with time zone,
    release_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT fire_batches_fires_check CHECK ((fires > 0)),
    CONSTRAINT fire_batches_trigger_check CHECK ((trigger = ANY (ARRAY['SCHEDULE'::text, 'MANUAL'::text, 'REPLAY'::text, 'BACKFILL'::text])))
);

--
-- Name: fire_batches_batch_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.fire_batches_batch_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: fire_batches_batch_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.fire_batches_batch_id_seq OWNED BY public.fire_batches.batch_id;

--
-- Name: fires; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.fires (
    job_id text NOT NULL,
    fence_token bigint NOT NULL,
    tenant_id text NOT NULL,
    shard integer NOT NULL,
    nominal_time timestamp with time zone NOT NULL,
    scheduled_for timestamp with time zone NOT NULL,
    trigger text DEFAULT 'SCHEDULE'::text NOT NULL,
    claimed_by text NOT NULL,
    claimed_at timestamp with time zone DEFAULT now() NOT NULL,
    event jsonb,
    trace_context jsonb,
    batch_id bigint NOT NULL,
    dst_shift_ms integer DEFAULT 0 NOT NULL,
    spread_offset_ms bigint DEFAULT 0 NOT NULL,
    job_version bigint,
    calendar_shift_ms bigint DEFAULT 0 NOT NULL,
    calendar text,
    CONSTRAINT fires_dst_shift_ms_check CHECK ((dst_shift_ms >= 0)),
    CONSTRAINT fires_trigger_check CHECK ((trigger = ANY (ARRAY['SCHEDULE'::text, 'MANUAL'::text, 'REPLAY'::text, 'BACKFILL'::text])))
);

--
-- Name: fire_log; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.fire_log AS
 SELECT f.job_id,
    f.fence_token,
    f.tenant_id,
    f.shard,
    f.nominal_time,
    f.scheduled_for,
    f.trigger,
    f.claimed_by,
    f.claimed_at,
    f.event,
    f.trace_context,
    f.batch_id,
    f.dst_shift_ms,
    f.spread_offset_ms,
    f.job_version,
    f.calendar_shift_ms,
    f.calendar,
    b.enqueued_at
   FROM (public.fires f
     JOIN public.fire_batches b ON ((b.batch_id = f.batch_id)));

--
-- Name: idempotency_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.idempotency_keys (
    tenant_id text NOT NULL,
    idempotency_key text NOT NULL,
    request_sha256 text NOT NULL,
    job_id text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: job_runs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.job_runs (
    job_id text NOT NULL,
    fence_token bigint NOT NULL,
    tenant_id text NOT NULL,
    fire_id text NOT NULL,
    nominal_time timestamp with time zone NOT NULL,
    scheduled_for timestamp with time zone NOT NULL,
    attempt integer DEFAULT 1 NOT NULL,
    status text NOT NULL,
    lease_owner text,
    lease_token uuid,
    lease_expires_at timestamp with time zone,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    http_status integer,
    error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    next_attempt_at timestamp with time zone,
    handed_off_at timestamp with time zone,
    spread_offset_ms bigint DEFAULT 0 NOT NULL,
    job_version bigint,
    dead_letter_reason text,
    CONSTRAINT job_runs_status_check CHECK ((status = ANY (ARRAY['RUNNING'::text, 'RETRYING'::text, 'SUCCEEDED'::text, 'DEAD_LETTERED'::text, 'SKIPPED'::text])))
);

--
-- Name: job_tombstones; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.job_tombstones (
    job_id text NOT NULL,
    tenant_id text NOT NULL,
    fence_token bigint NOT NULL,
    deleted_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: jobs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.jobs (
    job_id text NOT NULL,
    tenant_id text NOT NULL,
    shard integer NOT NULL,
    schedule_kind text NOT NULL,
    schedule jsonb NOT NULL,
    time_zone text DEFAULT 'UTC'::text NOT NULL,
    status text NOT NULL,
    next_run_at timestamp with time zone,
    next_nominal_at timestamp with time zone,
    fence_token bigint DEFAULT 0 NOT NULL,
    fires_count bigint DEFAULT 0 NOT NULL,
    last_fired_at timestamp with time zone,
    target jsonb NOT NULL,
    payload jsonb,
    policies jsonb NOT NULL,
    labels jsonb DEFAULT '{}'::jsonb NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    trace_context jsonb,
    next_dst_shift_ms integer DEFAULT 0 NOT NULL,
    paused_until timestamp with time zone,
    resume_catch_up jsonb,
    pause_resume jsonb,
    next_calendar_shift_ms bigint DEFAULT 0 NOT NULL,
    CONSTRAINT jobs_check CHECK (((status <> 'SCHEDULED'::text) OR ((next_run_at IS NOT NULL) AND (next_nominal_at IS NOT NULL)))),
    CONSTRAINT jobs_next_dst_shift_ms_check CHECK ((next_dst_shift_ms >= 0)),
    CONSTRAINT jobs_schedule_kind_check CHECK ((schedule_kind = ANY (ARRAY['once'::text, 'interval'::text, 'cron'::text, 'rrule'::text]))),
    CONSTRAINT jobs_shard_check CHECK ((shard >= 0)),
    CONSTRAINT jobs_status_check CHECK ((status = ANY (ARRAY['SCHEDULED'::text, 'PAUSED'::text, 'COMPLETED'::text])))
);

--
-- Name: occurrence_skips; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.occurrence_skips (
    id bigint NOT NULL,
    job_id text NOT NULL,
    tenant_id text NOT NULL,
    reason text NOT NULL,
    first_nominal timestamp with time zone NOT NULL,
    last_nominal timestamp with time zone NOT NULL,
    occurrences bigint NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    job_version bigint,
    calendar text,
    CONSTRAINT occurrence_skips_occurrences_check CHECK ((occurrences > 0))
);

--
-- Name: occurrence_skips_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.occurrence_skips_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: occurrence_skips_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.occurrence_skips_id_seq OWNED BY public.occurrence_skips.id;

--
-- Name: occurrence_slo; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.occurrence_slo (
    job_id text NOT NULL,
    fence_token bigint NOT NULL,
    tenant_id text NOT NULL,
    nominal_time timestamp with time zone NOT NULL,
    reason text NOT NULL,
    lateness_ms bigint,
    tolerance_ms bigint NOT NULL,
    deadline_at timestamp with time zone NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT occurrence_slo_lateness_ms_check CHECK (((lateness_ms IS NULL) OR (lateness_ms >= 0))),
    CONSTRAINT occurrence_slo_reason_check CHECK ((reason = ANY (ARRAY['LATE'::text, 'MISSED'::text]))),
    CONSTRAINT occurrence_slo_tolerance_ms_check CHECK ((tolerance_ms >= 0))
);

--
-- Name: schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: shard_leases; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shard_leases (
    shard integer NOT NULL,
    owner text,
    epoch bigint DEFAULT 0 NOT NULL,
    expires_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT shard_leases_shard_check CHECK ((shard >= 0))
);

--
-- Name: slo_sweep_floor; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.slo_sweep_floor (
    only_row boolean DEFAULT true NOT NULL,
    next_batch_id bigint NOT NULL,
    CONSTRAINT slo_sweep_floor_only_row_check CHECK (only_row)
);

--
-- Name: slo_sweep_marks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.slo_sweep_marks (
    shard integer NOT NULL,
    next_batch_id bigint NOT NULL,
    swept_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT slo_sweep_marks_shard_check CHECK ((shard >= 0))
);

--
-- Name: slo_watch; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.slo_watch (
    job_id text NOT NULL,
    fence_token bigint NOT NULL,
    tenant_id text NOT NULL,
    shard integer NOT NULL,
    nominal_time timestamp with time zone NOT NULL,
    tolerance_ms bigint NOT NULL,
    deadline_at timestamp with time zone NOT NULL
);

--
-- Name: store_shards; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.store_shards (
    shard integer NOT NULL,
    database text NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT store_shards_shard_check CHECK ((shard >= 0))
);

--
-- Name: audit_events id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit_events ALTER COLUMN id SET DEFAULT nextval('public.audit_events_id_seq'::regclass);

--
-- Name: backfills backfill_id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.backfills ALTER COLUMN backfill_id SET DEFAULT nextval('public.backfills_backfill_id_seq'::regclass);

--
-- Name: fire_batches batch_id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.fire_batches ALTER COLUMN batch_id SET DEFAULT nextval('public.fire_batches_batch_id_seq'::regclass);

--
-- Name: occurrence_skips id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.occurrence_skips ALTER COLUMN id SET DEFAULT nextval('public.occurrence_skips_id_seq'::regclass);

--
-- Name: applied_commands applied_commands_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.applied_commands
    ADD CONSTRAINT applied_commands_pkey PRIMARY KEY (tenant_id, command_id);

--
-- Name: audit_events audit_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit_events
    ADD CONSTRAINT audit_events_pkey PRIMARY KEY (id);

--
-- Name: backfill_items backfill_items_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.backfill_items
    ADD CONSTRAINT backfill_items_pkey PRIMARY KEY (backfill_id, seq);

--
-- Name: backfills backfills_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.backfills
    ADD CONSTRAINT backfills_pkey PRIMARY KEY (backfill_id);

--
-- Name: dead_letter_replays dead_letter_replays_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letter_replays
    ADD CONSTRAINT dead_letter_replays_pkey PRIMARY KEY (job_id, fence_token);

--
-- Name: executor_liveness executor_liveness_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.executor_liveness
    ADD CONSTRAINT executor_liveness_pkey PRIMARY KEY (issuer);

--
-- Name: fire_batches fire_batches_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.fire_batches
    ADD CONSTRAINT fire_batches_pkey PRIMARY KEY (batch_id);

--
-- Name: fires fires_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.fires
    ADD CONSTRAINT fires_pkey PRIMARY KEY (job_id, fence_token);

--
-- Name: idempotency_keys idempotency_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (tenant_id, idempotency_key);

--
-- Name: job_runs job_runs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_runs
    ADD CONSTRAINT job_runs_pkey PRIMARY KEY (job_id, fence_token);

--
-- Name: job_tombstones job_tombstones_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_tombstones
    ADD CONSTRAINT job_tombstones_pkey PRIMARY KEY (job_id);

--
-- Name: jobs jobs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT jobs_pkey PRIMARY KEY (job_id);

--
-- Name: occurrence_skips occurrence_skips_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.occurrence_skips
    ADD CONSTRAINT occurrence_skips_pkey PRIMARY KEY (id);

--
-- Name: occurrence_slo occurrence_slo_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.occurrence_slo
    ADD CONSTRAINT occurrence_slo_pkey PRIMARY KEY (job_id, fence_token);

--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);

--
-- Name: shard_leases shard_leases_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shard_leases
    ADD CONSTRAINT shard_leases_pkey PRIMARY KEY (shard);

--
-- Name: slo_sweep_floor slo_sweep_floor_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.slo_sweep_floor
    ADD CONSTRAINT slo_sweep_floor_pkey PRIMARY KEY (only_row);

--
-- Name: slo_sweep_marks slo_sweep_marks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.slo_sweep_marks
    ADD CONSTRAINT slo_sweep_marks_pkey PRIMARY KEY (shard);

--
-- Name: slo_watch slo_watch_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.slo_watch
    ADD CONSTRAINT slo_watch_pkey PRIMARY KEY (job_id, fence_token);

--
-- Name: store_shards store_shards_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.store_shards
    ADD CONSTRAINT store_shards_pkey PRIMARY KEY (shard);

--
-- Name: applied_commands_applied_at_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX applied_commands_applied_at_idx ON public.applied_commands USING btree (applied_at);

--
-- Name: audit_events_job_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX audit_events_job_idx ON public.audit_events USING btree (job_id, at DESC);

--
-- Name: audit_events_tenant_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX audit_events_tenant_idx ON public.audit_events USING btree (tenant_id, at DESC);

--
-- Name: backfill_items_planned_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX backfill_items_planned_idx ON public.backfill_items USING btree (backfill_id, seq) WHERE (state = 'PLANNED'::text);

--
-- Name: backfills_active_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX backfills_active_idx ON public.backfills USING btree (shard, next_fire_at) WHERE (status = ANY (ARRAY['PENDING'::text, 'RUNNING'::text]));

--
-- Name: backfills_job_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX backfills_job_idx ON public.backfills USING btree (job_id, backfill_id DESC);

--
-- Name: backfills_tenant_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX backfills_tenant_idx ON public.backfills USING btree (tenant_id, backfill_id DESC);

--
-- Name: business_calendar_versions_uq; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX business_calendar_versions_uq ON public.business_calendar_versions USING btree (COALESCE(tenant_id, ''::text), name, version);

--
-- Name: business_calendars_name_uq; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX business_calendars_name_uq ON public.business_calendars USING btree (COALESCE(tenant_id, ''::text), name);

--
-- Name: fire_batches_outbox_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX fire_batches_outbox_idx ON public.fire_batches USING btree (shard, claimed_at) WHERE (enqueued_at IS NULL);

--
-- Name: fire_batches_shard_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX fire_batches_shard_idx ON public.fire_batches USING btree (shard, batch_id) WHERE (trigger = 'SCHEDULE'::text);

--
-- Name: fires_batch_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX fires_batch_idx ON public.fires USING btree (batch_id);

--
-- Name: fires_occurrence_fired_uq; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX fires_occurrence_fired_uq ON public.fires USING btree (job_id, nominal_time, dst_shift_ms, calendar_shift_ms) WHERE (trigger = ANY (ARRAY['SCHEDULE'::text, 'BACKFILL'::text]));

--
-- Name: idempotency_keys_created_at_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX idempotency_keys_created_at_idx ON public.idempotency_keys USING btree (created_at);

--
-- Name: job_runs_dead_lettered_recent_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX job_runs_dead_lettered_recent_idx ON public.job_runs USING btree (updated_at DESC, job_id DESC, fence_token DESC) WHERE (status = 'DEAD_LETTERED'::text);

--
-- Name: job_runs_dead_letters_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX job_runs_dead_letters_idx ON public.job_runs USING btree (tenant_id, updated_at DESC) WHERE (status = 'DEAD_LETTERED'::text);

--
-- Name: job_runs_finished_purge_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX job_runs_finished_purge_idx ON public.job_runs USING btree (created_at) INCLUDE (job_id, tenant_id, status, attempt, scheduled_for, started_at) WHERE (status = ANY (ARRAY['SUCCEEDED'::text, 'DEAD_LETTERED'::text, 'SKIPPED'::text]));

--
-- Name: job_runs_in_flight_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX job_runs_in_flight_idx ON public.job_runs USING btree (lease_owner) WHERE (status = ANY (ARRAY['RUNNING'::text, 'RETRYING'::text]));

--
-- Name: job_runs_tenant_finished_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX job_runs_tenant_finished_idx ON public.job_runs USING btree (tenant_id, created_at) INCLUDE (job_id, status, attempt, scheduled_for, started_at) WHERE (status = ANY (ARRAY['SUCCEEDED'::text, 'DEAD_LETTERED'::text, 'SKIPPED'::text]));

--
-- Name: jobs_calendars_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_calendars_idx ON public.jobs USING gin (((policies -> 'calendars'::text))) WHERE (policies ? 'calendars'::text);

--
-- Name: jobs_due_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_due_idx ON public.jobs USING btree (shard, tenant_id, next_run_at) WHERE (status = 'SCHEDULED'::text);

--
-- Name: jobs_labels_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_labels_idx ON public.jobs USING gin (labels jsonb_path_ops) WHERE (labels <> '{}'::jsonb);

--
-- Name: jobs_paused_until_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_paused_until_idx ON public.jobs USING btree (shard, paused_until) WHERE (paused_until IS NOT NULL);

--
-- Name: jobs_slo_metrics_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_slo_metrics_idx ON public.jobs USING btree (shard) WHERE ((policies ->> 'slo_metrics'::text) = 'true'::text);

--
-- Name: jobs_tenant_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_tenant_idx ON public.jobs USING btree (tenant_id, job_id);

--
-- Name: occurrence_skips_first_nominal_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX occurrence_skips_first_nominal_idx ON public.occurrence_skips USING btree (first_nominal DESC);

--
-- Name: occurrence_skips_job_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX occurrence_skips_job_idx ON public.occurrence_skips USING btree (job_id, first_nominal DESC);

--
-- Name: occurrence_skips_tenant_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX occurrence_skips_tenant_idx ON public.occurrence_skips USING btree (tenant_id, first_nominal DESC);

--
-- Name: occurrence_slo_recorded_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX occurrence_slo_recorded_idx ON public.occurrence_slo USING btree (recorded_at);

--
-- Name: shard_leases_epoch_key; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX shard_leases_epoch_key ON public.shard_leases USING btree (shard, epoch);

--
-- Name: slo_watch_shard_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX slo_watch_shard_idx ON public.slo_watch USING btree (shard, deadline_at);

--
-- Name: fires fires_take_job_version; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER fires_take_job_version BEFORE INSERT ON public.fires FOR EACH ROW EXECUTE FUNCTION public.ledger_take_job_version();

--
-- Name: job_runs job_runs_take_fire_version; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER job_runs_take_fire_version BEFORE INSERT ON public.job_runs FOR EACH ROW EXECUTE FUNCTION public.job_runs_take_fire_version();

--
-- Name: jobs jobs_freeze_fire_events_on_change; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER jobs_freeze_fire_events_on_change AFTER UPDATE OF target, payload ON public.jobs FOR EACH ROW WHEN (((old.target IS DISTINCT FROM new.target) OR (old.payload IS DISTINCT FROM new.payload))) EXECUTE FUNCTION public.freeze_claimed_fire_events();

--
-- Name: jobs jobs_freeze_fire_events_on_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER jobs_freeze_fire_events_on_delete AFTER DELETE ON public.jobs FOR EACH ROW EXECUTE FUNCTION public.freeze_claimed_fire_events();

--
-- Name: occurrence_skips occurrence_skips_take_job_version; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER occurrence_skips_take_job_version BEFORE INSERT ON public.occurrence_skips FOR EACH ROW EXECUTE FUNCTION public.ledger_take_job_version();

--
-- Name: backfill_items backfill_items_backfill_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.backfill_items
    ADD CONSTRAINT backfill_items_backfill_id_fkey FOREIGN KEY (backfill_id) REFERENCES public.backfills(backfill_id) ON DELETE CASCADE;

--
-- PostgreSQL database dump complete
--
