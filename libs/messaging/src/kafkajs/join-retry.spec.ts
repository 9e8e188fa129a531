import { isPassingCoordinatorError, retryJoinThroughCoordinatorLoads, type JoiningGroup } from './join-retry';

/** kafkajs's protocol error shape: a type name and a retriable flag. */
const protocolError = (type: string) =>
  Object.assign(new Error(type), { name: 'KafkaJSProtocolError', type });

/** A group whose joins fail with the queued errors, then succeed. */
class ScriptedGroup implements JoiningGroup {
  joins = 0;
  constructor(private readonly failures: Error[]) {}
  joinAndSync(): Promise<unknown> {
    this.joins++;
    const e = this.failures.shift();
    return e ? Promise.reject(e) : Promise.resolve('joined');
  }
}

describe('retryJoinThroughCoordinatorLoads', () => {
  let clock = 0;
  const slept: number[] = [];
  beforeAll(() =>
    retryJoinThroughCoordinatorLoads(ScriptedGroup.prototype, {
      initialDelayMs: 100,
      maxDelayMs: 1_000,
      giveUpAfterMs: 5_000,
      now: () => clock,
      sleep: (ms) => {
        slept.push(ms);
        clock += ms;
        return Promise.resolve();
      },
    }),
  );
  beforeEach(() => {
    clock = 0;
    slept.length = 0;
  });

  it('joins again, backing off 100 ms doubling to 1 s, while the coordinator is loading or moving', async () => {
    const g = new ScriptedGroup([
      protocolError('GROUP_LOAD_IN_PROGRESS'),
      protocolError('GROUP_LOAD_IN_PROGRESS'),
      protocolError('NOT_COORDINATOR_FOR_GROUP'),
      Object.assign(new Error('no coordinator'), { name: 'KafkaJSGroupCoordinatorNotFound' }),
      protocolError('GROUP_COORDINATOR_NOT_AVAILABLE'),
    ]);
    await expect(g.joinAndSync()).resolves.toBe('joined');
    expect(g.joins).toBe(6);
    expect(slept).toEqual([100, 200, 400, 800, 1_000]);
  });

  it('throws any other error at once, as kafkajs did', async () => {
    const g = new ScriptedGroup([protocolError('INCONSISTENT_GROUP_PROTOCOL')]);
    await expect(g.joinAndSync()).rejects.toThrow('INCONSISTENT_GROUP_PROTOCOL');
    expect(g.joins).toBe(1);
    expect(slept).toEqual([]);
  });

  it('gives up after its limit, throwing the coordinator error (the consumer then crashes and restarts)', async () => {
    const g = new ScriptedGroup(Array.from({ length: 20 }, () => protocolError('GROUP_LOAD_IN_PROGRESS')));
    await expect(g.joinAndSync()).rejects.toThrow('GROUP_LOAD_IN_PROGRESS');
    expect(slept.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(5_000);
    expect(g.joins).toBeLessThan(20);
  });

  it('recognises a coordinator error wrapped by kafkajs (a cause chain)', () => {
    const wrapped = Object.assign(new Error('retries exceeded'), {
      name: 'KafkaJSNumberOfRetriesExceeded',
      cause: protocolError('GROUP_LOAD_IN_PROGRESS'),
    });
    expect(isPassingCoordinatorError(wrapped)).toBe(true);
    expect(isPassingCoordinatorError(protocolError('UNKNOWN_MEMBER_ID'))).toBe(false);
    expect(isPassingCoordinatorError(undefined)).toBe(false);
  });
});
