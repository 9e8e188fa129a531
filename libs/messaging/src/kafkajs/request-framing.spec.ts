import { frameRequest, type FramingArgs } from './request-framing';

// kafkajs's own framing and requests, to compare with (jest's registry ignores the stand-in).
/* eslint-disable @typescript-eslint/no-require-imports */
const kafkajsFrame = require('kafkajs/src/protocol/request') as typeof frameRequest;
const Encoder = require('kafkajs/src/protocol/encoder') as new () => {
  writeInt32(v: number): unknown;
  writeBytes(v: Buffer): unknown;
  readonly buffer: Buffer;
};
const requestOf = (path: string) =>
  require(`kafkajs/src/protocol/requests/${path}/request`) as (args: object) => FramingArgs['request'];
/* eslint-enable @typescript-eslint/no-require-imports */

const metadata = requestOf('metadata/v6')({
  topics: ['tickwork.fires', 'tickwork.fire-results'],
  allowAutoTopicCreation: false,
});
const fetch = requestOf('fetch/v11')({
  replicaId: -1,
  isolationLevel: 1,
  sessionId: 0,
  sessionEpoch: -1,
  maxWaitTime: 1_000,
  minBytes: 1,
  maxBytes: 10_485_760,
  topics: [
    { topic: 'tickwork.fires', partitions: [{ partition: 0, fetchOffset: '42', maxBytes: 1_048_576 }] },
  ],
  rackId: '',
});
const big = new Encoder();
big.writeBytes(Buffer.alloc(300_000, 9));
const large = { apiKey: 0, apiVersion: 7, encode: async () => big };

describe('framing a request', () => {
  it.each([
    ['a metadata request', metadata, 'tickwork-scheduler'],
    ['a fetch request', fetch, 'tickwork-executor'],
    ['a 300 KB body', large, 'bench'],
    ['a client id with multi-byte characters', metadata, 'планировщик-1'],
    ['no client id', fetch, null],
  ] as const)('frames %s byte for byte as kafkajs does', async (_name, request, clientId) => {
    const args = { correlationId: 123_456, clientId, request };
    const theirs = (await kafkajsFrame(args)).buffer;
    const ours = (await frameRequest(args)).buffer;
    expect(ours.length).toBe(theirs.length);
    expect(ours.equals(theirs)).toBe(true);
    expect(ours.readInt32BE(0)).toBe(ours.length - 4);
  });
});
