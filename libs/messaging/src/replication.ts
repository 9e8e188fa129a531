/**
 * Which replication layouts keep an acknowledged fire. Tickwork's producers always ask for
 * acks=all (ports.ts): a send is acknowledged once every replica in the partition's in-sync set
 * (ISR) has it, and the broker refuses the send (NOT_ENOUGH_REPLICAS) while the ISR is smaller than
 * the topic's min.insync.replicas. So an acknowledged fire is on at least min.insync.replicas
 * brokers, and it survives the loss of one broker only when that is 2 or more.
 *
 * The rules, for a topic of replication factor RF and min ISR M on a cluster of B brokers:
 * - M > RF is refused: no send can ever be acknowledged.
 * - RF > B is refused: the replicas cannot be placed (and an existing topic's are under-replicated).
 * - RF > 1 with M < 2 is refused: with RF 3 and M 1 the ISR may shrink to the leader alone and
 *   acknowledge a fire that one broker's loss then loses, while the layout looks replicated.
 * - RF = 1 (so M = 1) is allowed: the single-broker laptop default, where there is no second copy
 *   to pretend about.
 * - M = RF > 1 is allowed with a warning: nothing is lost, but one broker down stops every send.
 * Unclean leader election is turned off per topic, so an out-of-sync replica never becomes leader.
 */

export interface ReplicationLayout {
  readonly replicationFactor: number;
  readonly minInsyncReplicas: number;
  /** Brokers in the cluster, when known (at provisioning time; not when reading config). */
  readonly brokers?: number;
}

/** Problems (refused) and warnings (allowed) of a layout, each a sentence naming the numbers. */
export function replicationLayoutProblems(layout: ReplicationLayout): {
  problems: string[];
  warnings: string[];
} {
  const { replicationFactor: rf, minInsyncReplicas: minIsr, brokers } = layout;
  const problems: string[] = [];
  const warnings: string[] = [];
  if (!Number.isInteger(rf) || rf < 1)
    problems.push(`replication factor ${rf} must be an integer of at least 1`);
  if (!Number.isInteger(minIsr) || minIsr < 1)
    problems.push(`min.insync.replicas ${minIsr} must be an integer of at least 1`);
  if (problems.length > 0) return { problems, warnings };
  if (minIsr > rf)
    problems.push(
      `min.insync.replicas ${minIsr} is more than the replication factor ${rf}: no fire could ever be acknowledged`,
    );
  if (brokers !== undefined && rf > brokers)
    problems.push(
      `replication factor ${rf} needs ${rf} brokers but the cluster has ${brokers}: the replicas cannot be placed`,
    );
  if (rf > 1 && minIsr < 2)
    problems.push(
      `replication factor ${rf} with min.insync.replicas ${minIsr} acknowledges a fire held by one broker only, which that broker's loss loses: use min.insync.replicas 2 or more`,
    );
  if (rf > 1 && minIsr === rf)
    warnings.push(
      `min.insync.replicas ${minIsr} equals the replication factor ${rf}: one broker down stops every fire until it is back (replication factor ${rf + 1} keeps one spare)`,
    );
  return { problems, warnings };
}
