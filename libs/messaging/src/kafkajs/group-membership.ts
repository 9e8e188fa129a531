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

let installed: boolean | undefined;

/** Installs the member-id carry-over on kafkajs's ConsumerGroup, once per process; true when installed. */
export function keepGroupMembersAcrossRestarts(): boolean {
  if (installed !== undefined) return installed;
  // A deep import: the class is not exported, and kafkajs's consumer builds its groups from it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ConsumerGroup = require('kafkajs/src/consumer/consumerGroup') as { prototype: Partial<GroupMethods> };
  const p = ConsumerGroup.prototype;
  if (typeof p.connect !== 'function' || typeof p.joinAndSync !== 'function' || typeof p.leave !== 'function')
    throw new Error('kafkajs ConsumerGroup lacks connect/joinAndSync/leave: review group-membership.ts');
  const joinAndSync = p.joinAndSync;
  keepMemberIdAcrossRestarts(p as GroupMethods);
  installed = p.joinAndSync !== joinAndSync;
  return installed;
}

/**
 * Static group membership (KIP-345) for kafkajs, which has the protocol fields but never sends them.
 *
 * A member that joins with a `group.instance.id` the coordinator already knows takes over the old
 * member's place and assignment without a rebalance: an executor killed and started again under
 * the same name gets its partitions back and the survivors never stop. Without it, the restarted
 * process is a new member, and the rebalance it starts waits for the dead member's session to time
 * out while every survivor has given up its partitions.
 */

interface ProtocolRequest {
  readonly request: { readonly apiVersion: number };
}
interface BrokerInternals {
  lookupRequest(apiKey: number, definition: unknown): (args: Record<string, unknown>) => ProtocolRequest;
}
interface JoinGroupArgs {
  groupId: string;
  sessionTimeout: number;
  rebalanceTimeout: number;
  memberId?: string;
  protocolType?: string;
  groupProtocols: unknown;
}
interface BrokerMethods {
  joinGroup(this: BrokerInternals, args: JoinGroupArgs): Promise<unknown>;
  leaveGroup(this: BrokerInternals, args: { groupId: string; memberId: string }): Promise<unknown>;
}

/** The static member name of each group this process joins as a static member. */
const staticMembers = new Map<string, string>();

/** Kafka's rule for a group.instance.id (as for topic names): what the coordinator accepts. */
const INSTANCE_ID = /^[a-zA-Z0-9._-]{1,249}$/;

/** Joins `groupId` from now on as the static member `instanceId` (one consumer per group per process). */
export function useStaticMembership(groupId: string, instanceId: string): void {
  if (!INSTANCE_ID.test(instanceId))
    throw new Error(
      `group instance id "${instanceId}" must be 1-249 characters of a-z, A-Z, 0-9, '.', '_', '-'`,
    );
  const held = staticMembers.get(groupId);
  if (held !== undefined && held !== instanceId)
    throw new Error(`group ${groupId} is already joined as static member ${held} in this process`);
  staticMembers.set(groupId, instanceId);
}

/** The static member name this process uses in `groupId`, if any. */
export function staticMemberOf(groupId: string): string | undefined {
  return staticMembers.get(groupId);
}

/** Wraps the broker's JoinGroup and LeaveGroup so they carry the group's static member name. */
export function sendGroupInstanceIds(
  proto: BrokerMethods,
  send: (broker: BrokerInternals, request: ProtocolRequest) => Promise<unknown>,
  definitions: { joinGroup: [number, unknown]; leaveGroup: [number, unknown] },
): void {
  const { joinGroup, leaveGroup } = proto;
  proto.joinGroup = async function (this: BrokerInternals, args: JoinGroupArgs) {
    const groupInstanceId = staticMembers.get(args.groupId);
    if (groupInstanceId === undefined) return joinGroup.call(this, args);
    const build = this.lookupRequest(...definitions.joinGroup);
    const request = (memberId: string): ProtocolRequest => {
      const r = build({ ...args, protocolType: args.protocolType ?? 'consumer', memberId, groupInstanceId });
      if (r.request.apiVersion < 5)
        throw new Error(
          `the broker offers JoinGroup v${r.request.apiVersion}: static membership needs v5 (Kafka 2.3+)`,
        );
      return r;
    };
    try {
      return await send(this, request(args.memberId ?? ''));
    } catch (e) {
      // As kafkajs itself does: a broker that wants a member id first names one in the error.
      const err = e as { name?: string; memberId?: string };
      if (err.name === 'KafkaJSMemberIdRequired' && err.memberId) return send(this, request(err.memberId));
      throw e;
    }
  };
  proto.leaveGroup = async function (this: BrokerInternals, args: { groupId: string; memberId: string }) {
    const groupInstanceId = staticMembers.get(args.groupId);
    if (groupInstanceId === undefined) return leaveGroup.call(this, args);
    // LeaveGroup v3+ names the static member: the coordinator removes it and rebalances at once
    // (a graceful stop moves the partitions now instead of after the session timeout).
    return send(this, this.lookupRequest(...definitions.leaveGroup)({ ...args, groupInstanceId }));
  };
}

let brokersPatched: boolean | undefined;

/** Installs the static-membership fields on kafkajs's Broker, once per process; true when installed. */
export function installStaticMembership(): boolean {
  if (brokersPatched !== undefined) return brokersPatched;
  /* eslint-disable @typescript-eslint/no-require-imports -- deep imports: kafkajs does not export these */
  const Broker = require('kafkajs/src/broker') as { prototype: BrokerMethods & Record<symbol, unknown> };
  const { requests } = require('kafkajs/src/protocol/requests') as { requests: Record<string, unknown> };
  const apiKeys = require('kafkajs/src/protocol/requests/apiKeys') as Record<string, number>;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const sendSymbol = Object.getOwnPropertySymbols(Broker.prototype).find(
    (s) => s.description === 'private:Broker:sendRequest',
  );
  const joinKey = apiKeys.JoinGroup;
  const leaveKey = apiKeys.LeaveGroup;
  if (
    !sendSymbol ||
    joinKey === undefined ||
    leaveKey === undefined ||
    !requests.JoinGroup ||
    !requests.LeaveGroup
  )
    throw new Error(
      'kafkajs Broker internals changed (sendRequest / JoinGroup / LeaveGroup): review group-membership.ts',
    );
  const sendRequest = Broker.prototype[sendSymbol] as (this: unknown, r: ProtocolRequest) => Promise<unknown>;
  const joinGroup = Broker.prototype.joinGroup;
  sendGroupInstanceIds(Broker.prototype, (broker, r) => sendRequest.call(broker, r), {
    joinGroup: [joinKey, requests.JoinGroup],
    leaveGroup: [leaveKey, requests.LeaveGroup],
  });
  brokersPatched = Broker.prototype.joinGroup !== joinGroup;
  return brokersPatched;
}
