import { chooseFetchWait, setPausedFetchWait, usePausedFetchWait, type FetchingGroup } from './fetch-wait';

const group = (groupId: string, maxWaitTime: number, paused: unknown[]) => ({
  groupId,
  maxWaitTime,
  subscriptionState: { paused: () => paused },
});

describe('fetch waits', () => {
  it('uses the short wait while a partition is paused and the group’s own wait otherwise', () => {
    setPausedFetchWait('g-paused', 100);
    const paused: unknown[] = [];
    const g = group('g-paused', 1_000, paused);
    chooseFetchWait(g);
    expect(g.maxWaitTime).toBe(1_000);
    paused.push({ topic: 't', partitions: [0] });
    chooseFetchWait(g);
    expect(g.maxWaitTime).toBe(100);
    paused.length = 0;
    chooseFetchWait(g);
    expect(g.maxWaitTime).toBe(1_000);
  });

  it('never lengthens a wait, and leaves groups without a short wait alone', () => {
    setPausedFetchWait('g-short', 5_000);
    const g = group('g-short', 1_000, [{ topic: 't', partitions: [0] }]);
    chooseFetchWait(g);
    expect(g.maxWaitTime).toBe(1_000);
    const other = group('g-other', 700, [{ topic: 't', partitions: [0] }]);
    chooseFetchWait(other);
    expect(other.maxWaitTime).toBe(700);
  });

  it('wraps kafkajs’s ConsumerGroup.fetch so each fetch chooses its wait first', async () => {
    usePausedFetchWait();
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const ConsumerGroup = require('kafkajs/src/consumer/consumerGroup') as {
      prototype: { fetch(this: FetchingGroup, nodeId: number): Promise<unknown> };
    };
    setPausedFetchWait('g-kafkajs', 100);
    const seen: number[] = [];
    // Only what fetch touches before the wait matters: a group whose metadata refresh records the
    // wait chosen and stops the fetch there.
    const g = Object.assign(
      Object.create(ConsumerGroup.prototype) as object,
      group('g-kafkajs', 1_000, [{}]),
      {
        cluster: {
          refreshMetadataIfNecessary: async function (this: void) {
            seen.push(g.maxWaitTime);
            throw new Error('stop here');
          },
        },
        recoverFromFetch: async () => undefined,
      },
    ) as FetchingGroup;
    await ConsumerGroup.prototype.fetch.call(g, 0);
    expect(seen).toEqual([100]);
  });
});
