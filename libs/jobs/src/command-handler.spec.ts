/**
 * Where the command handler sends a command by its partition: misplaced commands (a key whose
 * murmur2 shard is another partition) are forwarded in order, and their offsets are marked only
 * once forwarded; commands of this partition are handled here, after the forwards before them.
 */
import { shardOf } from '@tickwork/domain';
import {
  ScheduleCommandHandler,
  type CommandBatch,
  type CommandMessage,
  type MisplacedCommand,
} from './command-handler';
import type { JobService } from './job-service';

const SHARDS = 6;
const PARTITION = 2;

/** Job ids whose shard is (or is not) PARTITION. */
function idsWhere(onPartition: boolean, count: number): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.length < count; i++)
    if ((shardOf(`job-${i}`, SHARDS) === PARTITION) === onPartition) ids.push(`job-${i}`);
  return ids;
}

function message(offset: number, key: string | null): CommandMessage {
  return {
    topic: 'p.commands',
    partition: PARTITION,
    offset: String(offset),
    key: key === null ? null : Buffer.from(key),
    value: Buffer.from([0, 0, 0, 0, 1, 2]),
    headers: { 'x-producer': 'python' },
  };
}

function setup(forward: (m: readonly MisplacedCommand[]) => Promise<void>) {
  const log: string[] = [];
  const batch = (messages: CommandMessage[]): CommandBatch => ({
    messages,
    markProcessed: (offset) => log.push(`mark ${offset}`),
    isActive: () => true,
  });
  const handler = new ScheduleCommandHandler(
    // Commands handled here are poison in this test: it is about where they go, not what they do.
    async () => ({ ok: false, failure: 'UNDECODABLE', reason: 'test bytes' }),
    {} as JobService,
    async (m, code) => {
      log.push(`reject ${m.offset} ${code}`);
    },
    {
      applied: () => undefined,
      duplicate: () => undefined,
      rejected: () => undefined,
      forwarded: (n) => log.push(`forwarded ${n}`),
    },
    { shardCount: SHARDS, maxCommandBytes: 1_000, storeHealthy: async () => true },
    async (misplaced) => {
      log.push(`forward ${misplaced.map((m) => `${m.message.offset}->${m.shard}`).join(',')}`);
      await forward(misplaced);
    },
  );
  return { log, batch, handler };
}

describe('ScheduleCommandHandler routing', () => {
  const [elsewhere1, elsewhere2] = idsWhere(false, 2) as [string, string];
  const [here] = idsWhere(true, 1) as [string];

  it('forwards consecutive misplaced commands in one send, in order, then handles the local one', async () => {
    const { log, batch, handler } = setup(async () => undefined);
    await handler.handleBatch(
      batch([
        message(10, elsewhere1),
        message(11, elsewhere2),
        message(12, elsewhere1),
        message(13, here),
        message(14, elsewhere2),
      ]),
    );
    const s1 = shardOf(elsewhere1, SHARDS);
    const s2 = shardOf(elsewhere2, SHARDS);
    expect(log).toEqual([
      `forward 10->${s1},11->${s2},12->${s1}`,
      'forwarded 3',
      'mark 12',
      'reject 13 UNDECODABLE',
      'mark 13',
      `forward 14->${s2}`,
      'forwarded 1',
      'mark 14',
    ]);
  });

  it('marks nothing it could not forward: the batch fails and comes back whole', async () => {
    const { log, batch, handler } = setup(async () => {
      throw new Error('broker down');
    });
    await expect(handler.handleBatch(batch([message(20, here), message(21, elsewhere1)]))).rejects.toThrow(
      'broker down',
    );
    expect(log).toEqual(['reject 20 UNDECODABLE', 'mark 20', `forward 21->${shardOf(elsewhere1, SHARDS)}`]);
  });

  it('handles a command without a key where it is (it cannot be routed; it is rejected)', async () => {
    const { log, batch, handler } = setup(async () => undefined);
    await handler.handleBatch(batch([message(30, null)]));
    expect(log).toEqual(['reject 30 UNDECODABLE', 'mark 30']);
  });
});
