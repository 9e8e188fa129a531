/**
 * BACKFILL schedule commands: applied through the backfill service with the command's stamp;
 * rejected without their backfill record (INVALID_COMMAND), by a consumer without the service
 * (UNKNOWN_TYPE), and for a refused request with the fields named as backfill.<field>.
 */
import { shardOf, ValidationError, type JsonValue } from '@tickwork/domain';
import type { BackfillService } from './backfill-service';
import { ScheduleCommandHandler, type CommandBatch, type ScheduleCommand } from './command-handler';
import type { JobService } from './job-service';

const SHARDS = 4;
const JOB = 'nightly';

function run(
  backfill: Record<string, JsonValue> | null,
  backfills: Pick<BackfillService, 'create'> | undefined,
): Promise<string[]> {
  const log: string[] = [];
  const command: ScheduleCommand = {
    commandId: 'c-1',
    type: 'BACKFILL',
    tenantId: 'acme',
    jobId: JOB,
    job: null,
    issuedAt: new Date(0),
    expectedVersion: null,
    backfill,
  };
  const handler = new ScheduleCommandHandler(
    async () => ({ ok: true, command }),
    { recordCommandRejection: async () => undefined } as unknown as JobService,
    async (_m, code, reason) => {
      log.push(`reject ${code} ${reason}`);
    },
    {
      applied: (type) => log.push(`applied ${type}`),
      duplicate: () => undefined,
      rejected: () => undefined,
      forwarded: () => undefined,
    },
    {
      shardCount: SHARDS,
      maxCommandBytes: 1_000,
      storeHealthy: async () => true,
      ...(backfills ? { backfills: backfills as BackfillService } : {}),
    },
    async () => undefined,
  );
  const batch: CommandBatch = {
    messages: [
      {
        topic: 'p.commands',
        partition: shardOf(JOB, SHARDS),
        offset: '7',
        key: Buffer.from(JOB),
        value: Buffer.from([0, 0, 0, 0, 1, 2]),
        headers: {},
      },
    ],
    markProcessed: () => undefined,
    isActive: () => true,
  };
  return handler.handleBatch(batch).then(() => log);
}

describe('BACKFILL commands', () => {
  const spec = { from: '2026-06-01T00:00:00.000Z', to: '2026-06-02T00:00:00.000Z' };

  it('are applied through the backfill service, with the command stamp', async () => {
    const calls: unknown[] = [];
    const log = await run(spec, {
      create: async (...args: unknown[]) => {
        calls.push(args);
        return {} as never;
      },
    });
    expect(log).toEqual(['applied BACKFILL']);
    expect(calls).toEqual([
      [
        { actor: 'kafka', role: 'tenant', tenantId: 'acme', via: 'kafka' },
        JOB,
        spec,
        { tenantId: 'acme', commandId: 'c-1', type: 'BACKFILL' },
      ],
    ]);
  });

  it('are rejected without their backfill record', async () => {
    expect(await run(null, { create: async () => ({}) as never })).toEqual([
      'reject INVALID_COMMAND backfill is required for BACKFILL',
    ]);
  });

  it('are rejected by a consumer that does not apply them', async () => {
    expect(await run(spec, undefined)).toEqual([
      'reject UNKNOWN_TYPE command type BACKFILL is not applied by this consumer',
    ]);
  });

  it('name the refused request fields as backfill.<field>', async () => {
    const log = await run(spec, {
      create: async () => {
        throw new ValidationError([{ field: 'to', message: 'must be after from' }]);
      },
    });
    expect(log).toEqual(['reject INVALID_COMMAND backfill.to: must be after from']);
  });
});
