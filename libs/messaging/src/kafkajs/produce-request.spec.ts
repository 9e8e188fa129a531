import { produceRequestV3, type ProduceRequestArgs } from './produce-request';

// kafkajs's own produce request, to compare bytes with.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const kafkajsRequest = require('kafkajs/src/protocol/requests/produce/v3/request') as (
  args: ProduceRequestArgs,
) => {
  apiKey: number;
  apiVersion: number;
  apiName: string;
  expectResponse(): boolean;
  encode(): Promise<{ buffer: Buffer }>;
};
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Long = require('kafkajs/src/utils/long') as {
  fromInt(v: number): unknown;
  fromString(v: string): unknown;
};

const ours = produceRequestV3();

const fire = (n: number, timestamp?: string) => ({
  key: `job-${n}`,
  value: Buffer.alloc(200, n),
  headers: {
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    'tickwork-fire-id': `job-${n}:${n + 1}`,
    'tickwork-attempt': '1',
    repeated: ['a', 'b'],
  },
  ...(timestamp ? { timestamp } : {}),
});

const requests: [string, ProduceRequestArgs][] = [
  [
    'an idempotent producer, two topics, several partitions, no timestamps',
    {
      acks: -1,
      timeout: 30_000,
      producerId: Long.fromString('4711'),
      producerEpoch: 3,
      topicData: [
        {
          topic: 'tickwork.fires',
          partitions: [
            { partition: 0, firstSequence: 12, messages: [fire(1), fire(2), fire(3)] },
            { partition: 5, firstSequence: 0, messages: [fire(4)] },
          ],
        },
        {
          topic: 'tickwork.fire-results',
          partitions: [{ partition: 2, firstSequence: 7, messages: [fire(5)] }],
        },
      ],
    },
  ],
  [
    'given timestamps, out of order, and one missing',
    {
      acks: 1,
      timeout: 5_000,
      topicData: [
        {
          topic: 't',
          partitions: [
            {
              partition: 1,
              messages: [
                fire(1, '1767225600300'),
                fire(2, '1767225600100'),
                fire(3),
                { key: null, value: null },
              ],
            },
          ],
        },
      ],
    },
  ],
  [
    'multi-byte text, buffer and missing headers, a large value, a null key',
    {
      acks: -1,
      timeout: 30_000,
      producerId: Long.fromString('9007199254740'),
      producerEpoch: 1,
      topicData: [
        {
          topic: 'tickwork.targets',
          partitions: [
            {
              partition: 11,
              firstSequence: 2_147_483_000,
              messages: [
                { key: 'ключ-ä', value: 'zażółć gęślą jaźń', headers: { 'ü-name': ['ä', 'b'] } },
                {
                  key: Buffer.from([0, 1, 255]),
                  value: Buffer.alloc(70_000, 3),
                  headers: { raw: Buffer.from([0, 255]) },
                },
                { key: null, value: Buffer.alloc(0), headers: {} },
              ],
            },
          ],
        },
      ],
    },
  ],
  [
    "a gzip-compressed batch (encoded by kafkajs's record batch)",
    {
      acks: -1,
      timeout: 30_000,
      compression: 1,
      topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [fire(1), fire(2)] }] }],
    },
  ],
  [
    'a transactional producer with acks 0',
    {
      acks: 0,
      timeout: 1_000,
      transactionalId: 'tx-1',
      topicData: [{ topic: 't', partitions: [{ partition: 3, firstSequence: 5, messages: [fire(9)] }] }],
    },
  ],
];

describe('produce request without a per-message copy', () => {
  beforeEach(() => jest.spyOn(Date, 'now').mockReturnValue(1_767_225_600_000));
  afterEach(() => jest.restoreAllMocks());

  it.each(requests)('encodes %s byte for byte as kafkajs does', async (_name, args) => {
    const theirs = kafkajsRequest(args);
    const mine = ours(args);
    expect([mine.apiKey, mine.apiVersion, mine.apiName, mine.expectResponse()]).toEqual([
      theirs.apiKey,
      theirs.apiVersion,
      theirs.apiName,
      theirs.expectResponse(),
    ]);
    const expected = (await theirs.encode()).buffer;
    expect(expected.length).toBeGreaterThan(10);
    expect((await mine.encode()).buffer.equals(expected)).toBe(true);
  });
});
