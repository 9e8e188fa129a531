/**
 * Renews a run's lease every heartbeat from the start of its target call until its outcome is
 * recorded. While the call runs, a renewal that finds the lease gone aborts it, and so does a
 * ledger unreachable for a whole lease (someone else may hold the run by then). Once the call has
 * answered, nothing aborts anything: the answer is kept and its write retried under the lease.
 */
import { everyOn, type Clock, type FireKey } from '@tickwork/domain';
import type { RunLedger } from './run-ledger';

export class LeaseKeeper {
  /** When the lease was last known to be held: the send time of the last renewal that found it. */
  private heldAt: number;
  private readonly stopBeating: () => void;
  private call: AbortController | undefined;
  /** The call was aborted because the ledger could not confirm the lease for a whole lease. */
  unconfirmed = false;

  constructor(
    private readonly runs: RunLedger,
    private readonly clock: Clock,
    private readonly key: FireKey,
    private readonly leaseToken: string,
    private readonly leaseMs: number,
    heartbeatMs: number,
    heldAt: number,
  ) {
    this.heldAt = heldAt;
    this.stopBeating = everyOn(clock, heartbeatMs, () => this.renew());
  }

  /** The call in flight (aborted by a lost lease), or undefined once it answered. */
  guard(call: AbortController | undefined): void {
    this.call = call;
  }

  /** Stops renewing (the outcome is recorded, or the delivery gave up). */
  stop(): void {
    this.stopBeating();
    this.call = undefined;
  }

  private renew(): void {
    const sent = this.clock.now();
    this.runs.heartbeat(this.key, this.leaseToken, this.leaseMs).then(
      (held) => {
        if (held) this.heldAt = Math.max(this.heldAt, sent);
        else this.call?.abort();
      },
      () => {
        const call = this.call;
        if (call && this.clock.now() - this.heldAt >= this.leaseMs) {
          this.unconfirmed = !call.signal.aborted;
          call.abort();
        }
      },
    );
  }
}
