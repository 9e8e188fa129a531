/**
 * The claim's vocabulary: what the scheduler asks of its store each tick (libs/scheduling's
 * ClaimStore port; libs/store's FireStore implements it) and what it gets back.
 */
import type { DueOccurrencePlan } from './claim-planner';
import type { FireEvent } from './fire';
import type { ClaimableJob } from './job';
import type { ShardEpoch } from './fence';

/**
 * The trace context a job row keeps (the request that last scheduled it, and the job's fence
 * token then): opaque to the claim, read by its tracing.
 */
export interface JobTraceOrigin {
  readonly traceparent: string;
  readonly tracestate?: string;
  readonly fence_token: number;
}

/** A due job as the claim sees it: the job, and whether its previous fire is still in flight. */
export interface DueJob {
  readonly job: ClaimableJob;
  /** Only computed for overlap FORBID jobs: the latest fire has not reached a final state. */
  readonly previousFireInFlight: boolean;
  /** The trace of the request that last scheduled the job, when it had one. */
  readonly traceOrigin?: JobTraceOrigin;
}

/** Plans one due job at database time `now` (pure; the domain's planDueOccurrences). */
export type ClaimPlanner = (due: DueJob, now: Date) => DueOccurrencePlan;

/** A tenant with due work in a shard. */
export interface DueTenant {
  readonly shard: number;
  readonly tenant_id: string;
}

/** What a lock-free probe saw in the shards the caller appears to hold. */
export interface DueProbe {
  readonly now: Date;
  /** Shards whose lease the caller held at the probe (without a lock). */
  readonly held: readonly number[];
  readonly due: readonly DueTenant[];
  /** Held shards with outbox batches to relay (orphaned past `relayAgeMs`, or manual). */
  readonly relay: readonly number[];
}

export interface DueProbeRequest {
  readonly owner: string;
  readonly shards: readonly ShardEpoch[];
  readonly lookaheadMs: number;
  /**
   * Outbox batches of scheduled claims this far past their release time count as orphaned (see
   * `pendingFires`). Absent: the outbox is not looked at and `relay` is empty (a claim's own probe).
   */
  readonly relayAgeMs?: number;
}

export interface ClaimRequest {
  readonly owner: string;
  readonly shards: readonly ShardEpoch[];
  readonly limit: number;
  readonly lookaheadMs: number;
  /** Per-tenant caps for this batch, given the tenants with due work (fairness and quotas). */
  readonly tenantCaps?: (tenantIds: readonly string[]) => ReadonlyMap<string, number>;
  /** A fresh `probeDue` of these shards, to claim from instead of probing again. */
  readonly probe?: DueProbe;
}

/** Occurrences of one job that the claim skipped, and why (MISFIRE_SKIP, COALESCED, OVERLAP, …). */
export interface ClaimSkip {
  readonly tenantId: string;
  readonly reason: string;
  readonly occurrences: number;
}

export interface ClaimedFire {
  readonly shard: number;
  /** The outbox batch the fire was claimed in: Kafka's acknowledgement is recorded per batch. */
  readonly batchId: number;
  readonly event: FireEvent;
}

export interface ClaimResult {
  /** Database time of the claim. */
  readonly now: Date;
  /** Shards whose lease was valid for this claim; the others were not scanned. */
  readonly fencedOut: readonly number[];
  readonly fires: readonly ClaimedFire[];
  readonly skipped: number;
  readonly scanned: number;
  /** Jobs whose stored definition could not be planned: paused so they cannot block the shard. */
  readonly parked: readonly string[];
  /** Some tenant filled its cap: more may be due right now. */
  readonly saturated: boolean;
  /** The skipped occurrences behind `skipped`, by tenant and reason. */
  readonly skips: readonly ClaimSkip[];
}

/** A due job the claim could not plan or store: it is parked (paused), with `error` in its ledger. */
export interface UnplannableJob {
  readonly jobId: string;
  readonly tenantId: string;
  /** The due occurrence, as stored (it may be what is wrong with the job). */
  readonly nominal: unknown;
  readonly error: string;
}

/** One claimed occurrence's `fires` row: two may share a nominal instant, never a DST shift as well. */
export interface FireClaimRow {
  readonly jobId: string;
  readonly token: number;
  /** Instants as ISO text, checked to be ones the store can hold. */
  readonly nominal: string;
  readonly shift: number;
  readonly scheduled: string;
  /** The herd window's offset of the slot (0: none). */
  readonly spread: number;
  /** How far a calendar rule moved the occurrence (0: not moved), and the calendar `name@version`. */
  readonly calendarShift: number;
  readonly calendar: string | null;
}

/** One skipped run of occurrences, as the occurrence ledger records it. */
export interface SkipClaimRow {
  readonly jobId: string;
  readonly tenantId: string;
  readonly reason: string;
  readonly first: string;
  readonly last: string;
  readonly count: number;
  readonly calendar: string | null;
}

/** One planned job's share of a claim's write, its instants already as ISO text. */
export interface JobClaim {
  readonly jobId: string;
  readonly tenantId: string;
  readonly dueNominal: Date | null;
  /** Fires claimed: the job's fence token and fire count advance by this much. */
  readonly n: number;
  readonly next: string | null;
  readonly nextNominal: string | null;
  readonly nextShift: number;
  readonly nextCalendarShift: number;
  readonly status: 'SCHEDULED' | 'COMPLETED';
  /** The fires, their batch not yet known (0). */
  readonly fires: readonly ClaimedFire[];
  readonly fireRows: readonly FireClaimRow[];
  /** Per fire, the trace context to store with it (JSON text), or null; absent: none. */
  readonly traces?: readonly (string | null)[];
  readonly skips: readonly ClaimSkip[];
  readonly skipRows: readonly SkipClaimRow[];
  readonly skipped: number;
}

/** What a claim writes for the due jobs it locked. */
export interface ClaimBatch {
  readonly jobs: readonly JobClaim[];
  readonly unplannable: readonly UnplannableJob[];
}

/**
 * Turns the due jobs a claim locked, at database time `now`, into what it writes (pure; called
 * inside the claim's transaction, once per attempt).
 */
export type ClaimBuilder = (due: readonly DueJob[], now: Date) => ClaimBatch;

/** Which outbox batches to relay: see the ClaimStore's `pendingFires`. */
export interface PendingFiresRequest {
  readonly owner: string;
  readonly shards: readonly ShardEpoch[];
  readonly minAgeMs: number;
  readonly limit: number;
  /** Batches the caller is still publishing itself. */
  readonly exclude?: readonly number[];
}
