/**
 * The run ledger port: the statements a delivery of a fire makes against the ledger of runs (its
 * idempotency key and lease per fire). libs/store's RunRepository is the PostgreSQL adapter; the
 * apps wire it in (through CoalescingLedger and TracedLedger).
 */
import type { FireEvent, FireKey, RecordedRun, RunCompletion, RunStart, UnleasedRun } from '@tickwork/domain';

/** The ledger operations the executor needs. */
export interface RunLedger {
  /**
   * Starts (or takes over) the run of `fire` under `leaseToken` (issueLeaseToken), or says why it
   * may not run. A RUNNING run under a lease of the same issuer is taken back at once.
   */
  beginRun(fire: FireEvent, owner: string, leaseMs: number, leaseToken?: string): Promise<RunStart>;
  /** Extends the lease; false when it is no longer held under `leaseToken`. */
  heartbeat(key: FireKey, leaseToken: string, leaseMs: number): Promise<boolean>;
  /** Records the attempt's outcome under the lease: its recorded start and finish (the FireResult's times); null when fenced out. */
  completeRun(key: FireKey, leaseToken: string, outcome: RunCompletion): Promise<RecordedRun | null>;
  /** Notes that the retry message or dead letter of this run (in this status and attempt) is on Kafka. */
  markHandedOff(key: FireKey, status: 'RETRYING' | 'DEAD_LETTERED', attempt: number): Promise<void>;
  /** Gives a lease up early (the executor is stopping), so another executor may take the run now. */
  releaseRun(key: FireKey, leaseToken: string): Promise<void>;
  /** Whether this fire's first attempt may run without a lease: no run of it recorded, its job still there. */
  mayRunUnleased(key: FireKey): Promise<boolean>;
  /** Records a successful first attempt that ran without a lease, with its recorded times; null when another run was recorded first. */
  recordUnleasedRun(run: UnleasedRun): Promise<RecordedRun | null>;
  /** mayRunUnleased of several fires at once (absent: one call each). */
  mayRunUnleasedMany?(keys: readonly FireKey[]): Promise<boolean[]>;
  /** recordUnleasedRun of several runs at once (absent: one call each). */
  recordUnleasedRuns?(runs: readonly UnleasedRun[]): Promise<(RecordedRun | null)[]>;
  /**
   * Whether `error`, thrown by one of these statements, says the ledger could not be reached (the
   * database restarting, a connection cut): the statement is tried again. Anything else is thrown.
   */
  isUnavailable(error: unknown): boolean;
}
