/**
 * A consumer keeps its group member id across kafkajs's crash-restarts.
 *
 * kafkajs restarts a consumer after a crash (a broker restart, a coordinator that is loading, no
 * broker reachable) with a new ConsumerGroup, whose JoinGroup asks for a new member id. The old
 * member did not leave (its LeaveGroup failed with the broker down), so the coordinator keeps it,
 * and the rebalance the new member starts waits for the old one until its session times out:
 * after a broker restart the whole group stalled for a session timeout on members that were alive
 * all along. Rejoining under the old id lets the coordinator count the member as back at once; an
 * id the coordinator no longer knows is answered UNKNOWN_MEMBER_ID, on which kafkajs joins anew.
 */

/** The fields of kafkajs's ConsumerGroup this reads and writes. */
export interface GroupMember {
  memberId: string | null;
  readonly cluster: object;
}

interface GroupMethods {
  connect(this: GroupMember): Promise<unknown>;
  joinAndSync(this: GroupMember): Promise<unknown>;
  leave(this: GroupMember): Promise<unknown>;
}

/** The member id each consumer (known by its cluster object, one per consumer) last held. */
const lastMemberId = new WeakMap<object, string>();

/** Wraps the prototype's methods so a restarted group rejoins as the member it was. */
export function keepMemberIdAcrossRestarts(proto: GroupMethods): void {
  const { connect, joinAndSync, leave } = proto;
  proto.connect = async function (this: GroupMember) {
    const carried = lastMemberId.get(this.cluster);
    if (!this.memberId && carried) this.memberId = carried;
    return connect.call(this);
  };
  proto.joinAndSync = async function (this: GroupMember) {
    try {
      return await joinAndSync.call(this);
    } finally {
      // Set on success; reset to null by kafkajs when the coordinator no longer knew the member.
      if (this.memberId) lastMemberId.set(this.cluster, this.memberId);
      else lastMemberId.delete(this.cluster);
    }
  };
  proto.leave = async function (this: GroupMember) {
    const result = await leave.call(this);
    // Left the group for good: a later start of this consumer is a new member.
    lastMemberId.delete(this.cluster);
    return result;
  };
}

let installed = false;

/** Installs the member-id carry-over on kafkajs's ConsumerGroup, once per process. */
export function keepGroupMembersAcrossRestarts(): void {
  if (installed) return;
  installed = true;
  // A deep import: the class is not exported, and kafkajs's consumer builds its groups from it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ConsumerGroup = require('kafkajs/src/consumer/consumerGroup') as { prototype: Partial<GroupMethods> };
  const p = ConsumerGroup.prototype;
  if (typeof p.connect !== 'function' || typeof p.joinAndSync !== 'function' || typeof p.leave !== 'function')
    throw new Error('kafkajs ConsumerGroup lacks connect/joinAndSync/leave: review group-membership.ts');
  keepMemberIdAcrossRestarts(p as GroupMethods);
}
