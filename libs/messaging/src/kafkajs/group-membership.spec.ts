import { keepMemberIdAcrossRestarts, type GroupMember } from './group-membership';

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
