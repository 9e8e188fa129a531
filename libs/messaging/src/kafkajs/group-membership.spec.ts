import {
  keepMemberIdAcrossRestarts,
  sendGroupInstanceIds,
  staticMemberOf,
  useStaticMembership,
  type GroupMember,
} from './group-membership';

/** A stand-in for kafkajs's ConsumerGroup: what join and leave do to the member id. */
class FakeGroup implements GroupMember {
  memberId: string | null = null;
  joinedAs: (string | null)[] = [];
  joinFails: Error | undefined;
  coordinatorForgot = false;
  leaveFails = false;
  constructor(readonly cluster: object) {}
  async connect(): Promise<void> {}
  async joinAndSync(): Promise<void> {
    this.joinedAs.push(this.memberId);
    if (this.coordinatorForgot) this.memberId = null; // kafkajs on UNKNOWN_MEMBER_ID
    if (this.joinFails) throw this.joinFails;
    this.memberId ??= `m-${Math.random()}`;
  }
  async leave(): Promise<void> {
    if (this.leaveFails) throw new Error('no broker');
    this.memberId = null;
  }
}
keepMemberIdAcrossRestarts(FakeGroup.prototype);

const start = async (g: FakeGroup) => {
  await g.connect();
  await g.joinAndSync();
};

describe('keepMemberIdAcrossRestarts', () => {
  it('a group restarted after a crash (leave failed) rejoins under the member id it had', async () => {
    const cluster = {};
    const first = new FakeGroup(cluster);
    await start(first);
    first.leaveFails = true;
    await expect(first.leave()).rejects.toThrow('no broker');
    const second = new FakeGroup(cluster);
    await start(second);
    expect(second.joinedAs).toEqual([first.memberId]);
  });

  it('a group that left for good starts as a new member', async () => {
    const cluster = {};
    const first = new FakeGroup(cluster);
    await start(first);
    await first.leave();
    const second = new FakeGroup(cluster);
    await start(second);
    expect(second.joinedAs).toEqual([null]);
  });

  it('a join that crashed keeps the id for the next start; one the coordinator forgot is dropped', async () => {
    const cluster = {};
    const first = new FakeGroup(cluster);
    await start(first);
    const id = first.memberId;
    const second = new FakeGroup(cluster);
    second.joinFails = new Error('coordinator loading');
    await expect(start(second)).rejects.toThrow('coordinator loading');
    const third = new FakeGroup(cluster);
    third.coordinatorForgot = true;
    third.joinFails = new Error('unknown member');
    await expect(start(third)).rejects.toThrow('unknown member');
    const fourth = new FakeGroup(cluster);
    await start(fourth);
    expect([second.joinedAs, third.joinedAs, fourth.joinedAs]).toEqual([[id], [id], [null]]);
  });

  it('consumers do not share ids: each is known by its own cluster', async () => {
    const a = new FakeGroup({});
    await start(a);
    a.leaveFails = true;
    await a.leave().catch(() => undefined);
    const b = new FakeGroup({});
    await start(b);
    expect(b.joinedAs).toEqual([null]);
  });
});

describe('sendGroupInstanceIds', () => {
  /** A stand-in for kafkajs's Broker: records what each request factory was given. */
  const built: Record<string, unknown>[] = [];
  const sent: string[] = [];
  let apiVersion = 5;
  let requireMemberId = false;
  const factory = (name: string) => (args: Record<string, unknown>) => {
    built.push({ name, ...args });
    return { request: { apiVersion } };
  };
  const proto = {
    joinGroup: async () => 'dynamic join',
    leaveGroup: async () => 'dynamic leave',
  };
  const broker = {
    lookupRequest: (key: number) => factory(key === 11 ? 'JoinGroup' : 'LeaveGroup'),
  };
  sendGroupInstanceIds(
    proto as never,
    async (_b, r) => {
      const last = built[built.length - 1]!;
      if (requireMemberId && last.memberId === '') {
        throw Object.assign(new Error('member id required'), {
          name: 'KafkaJSMemberIdRequired',
          memberId: 'm-9',
        });
      }
      sent.push(`${String(last.name)} v${r.request.apiVersion}`);
      return 'sent';
    },
    { joinGroup: [11, {}], leaveGroup: [13, {}] },
  );
  const join = (groupId: string) =>
    (proto.joinGroup as (a: object) => Promise<unknown>).call(broker, {
      groupId,
      sessionTimeout: 6000,
      rebalanceTimeout: 6000,
      memberId: '',
      groupProtocols: [],
    });
  const leave = (groupId: string) =>
    (proto.leaveGroup as (a: object) => Promise<unknown>).call(broker, { groupId, memberId: 'm-1' });

  beforeEach(() => {
    built.length = 0;
    sent.length = 0;
    apiVersion = 5;
    requireMemberId = false;
  });

  it('joins and leaves a group with no static name as kafkajs does', async () => {
    expect(await join('g-dynamic')).toBe('dynamic join');
    expect(await leave('g-dynamic')).toBe('dynamic leave');
    expect(built).toEqual([]);
  });

  it('sends the static name with JoinGroup and LeaveGroup of its group', async () => {
    useStaticMembership('g-static', 'executor-1');
    expect(await join('g-static')).toBe('sent');
    expect(await leave('g-static')).toBe('sent');
    expect(built).toEqual([
      expect.objectContaining({
        name: 'JoinGroup',
        groupId: 'g-static',
        groupInstanceId: 'executor-1',
        protocolType: 'consumer',
      }),
      expect.objectContaining({
        name: 'LeaveGroup',
        groupId: 'g-static',
        memberId: 'm-1',
        groupInstanceId: 'executor-1',
      }),
    ]);
    expect(staticMemberOf('g-static')).toBe('executor-1');
  });

  it('joins again with the member id the broker asked for', async () => {
    useStaticMembership('g-required', 'executor-2');
    requireMemberId = true;
    expect(await join('g-required')).toBe('sent');
    expect(built.map((b) => b.memberId)).toEqual(['', 'm-9']);
  });

  it('refuses a broker too old for static membership', async () => {
    useStaticMembership('g-old', 'executor-3');
    apiVersion = 4;
    await expect(join('g-old')).rejects.toThrow('JoinGroup v4: static membership needs v5');
  });

  it('refuses a bad name and a second name for one group', () => {
    expect(() => useStaticMembership('g-x', 'bad name')).toThrow('must be 1-249 characters');
    useStaticMembership('g-y', 'a');
    expect(() => useStaticMembership('g-y', 'b')).toThrow('already joined as static member a');
  });
});
