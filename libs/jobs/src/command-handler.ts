/**
 * Applies schedule commands from the commands topic through the jobs service, one partition batch
 * at a time and in offset order (so in order per job: commands are keyed by job id). Each command
 * has one outcome per (tenant, command_id): applied once, or rejected once (a later copy of a
 * rejected command is rejected again, never applied). A command found on a partition that is not
 * its key's shard (a producer whose partitioner is not Kafka's murmur2, e.g. librdkafka's default
 * CRC32) is not applied there: it is forwarded, bytes and headers unchanged, to its shard's
 * partition, where that shard's owner applies it in order with the job's other commands. Poison of every kind — undecodable bytes, an unknown or
 * unreadable schema, a missing or bad field, an invalid job, a command for another tenant's job, an
 * oversized message — is forwarded to the rejected topic with the original bytes and a reason, its
 * offset is marked processed, and it is counted: it never blocks the partition. Only trouble that
 * is not the message's fault (the database or registry unreachable) stops the batch, to be retried.
 */
import {
  DuplicateCommandError,
  JOB_ID_PATTERN,
  shardOfKey,
  TENANT_ID_PATTERN,
  unstorableTextProblem,
  ValidationError,
  type JsonValue,
} from '@tickwork/domain';
import type { Caller } from './caller';
import { errorCodeOf, JobNotFoundError } from './errors';
import type { JobService } from './job-service';
import type { BackfillService } from './backfill-service';

/** A command message as consumed (structurally the messaging port's InboundMessage). */
export interface CommandMessage {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Readonly<Record<string, string>>;
}

/** A batch of one partition, with its acknowledgement (structurally the messaging port's InboundBatch). */
export interface CommandBatch {
  readonly messages: readonly CommandMessage[];
  markProcessed(offset: string): void;
  isActive(): boolean;
}

/** The decoded command (the messaging lib's DecodedScheduleCommand). */
export interface ScheduleCommand {
  readonly commandId: string;
  readonly type: string;
  readonly tenantId: string;
  readonly jobId: string;
  readonly job: Record<string, JsonValue> | null;
  readonly issuedAt: Date;
  readonly expectedVersion: number | null;
  /** BACKFILL's request ({from, to, max_per_second?, skip_reasons?}); null or absent otherwise. */
  readonly backfill?: Record<string, JsonValue> | null;
}

/** Reads command bytes: poison is a failure with a reason; an unreachable registry throws. */
export type CommandDecoder = (
  bytes: Buffer | null,
) => Promise<
  | { readonly ok: true; readonly command: ScheduleCommand }
  | { readonly ok: false; readonly failure: string; readonly reason: string }
>;

/** Why a command was rejected (the `tickwork-reject-code` header). */
export type RejectCode =
  | 'EMPTY'
  | 'OVERSIZED'
  | 'UNDECODABLE'
  | 'UNKNOWN_SCHEMA'
  | 'SCHEMA_MISMATCH'
  | 'INVALID_COMMAND'
  | 'KEY_MISMATCH'
  | 'UNKNOWN_TYPE'
  | 'INVALID_JOB'
  | 'CROSS_TENANT'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'FAILED_PRECONDITION'
  | 'QUOTA_EXCEEDED'
  | 'INTERNAL';

/** Where rejected commands go: the rejected topic, with the original bytes and the reason. */
export type RejectedCommandSink = (
  message: CommandMessage,
  code: RejectCode,
  reason: string,
) => Promise<void>;

/** A command found on another shard's partition, and the partition (its shard) it belongs on. */
export interface MisplacedCommand {
  readonly message: CommandMessage;
  readonly shard: number;
}

/**
 * Sends misplaced commands, in order, to their shards' partitions of the commands topic with the
 * same key, value and headers (plus `tickwork-forwarded-from`); resolves once Kafka has them all.
 */
export type CommandForwarder = (commands: readonly MisplacedCommand[]) => Promise<void>;

/** Counters for applied, duplicate, rejected and forwarded commands (wired to the telemetry meter). */
export interface CommandMetrics {
  applied(type: string): void;
  duplicate(type: string): void;
  rejected(code: RejectCode): void;
  forwarded(count: number): void;
}

export interface CommandHandlerOptions {
  /** Partitions of the commands topic (= shards): a command on another one than its key's shard is forwarded. */
  readonly shardCount: number;
  /** Messages larger than this are rejected as OVERSIZED before decoding. */
  readonly maxCommandBytes: number;
  /**
   * Whether the database answers. An unexpected error while it does is the command's fault after
   * `maxUnexpectedFailures` tries (rejected as INTERNAL); while it does not, it is retried forever.
   */
  readonly storeHealthy: () => Promise<boolean>;
  readonly maxUnexpectedFailures?: number;
  /** Rejections are logged as warnings, forwards as info. */
  readonly log?: (message: string, level: 'info' | 'warn') => void;
  /** Applies BACKFILL commands; without it they are rejected as UNKNOWN_TYPE. */
  readonly backfills?: BackfillService;
}

export const COMMAND_TYPES = ['UPSERT', 'PAUSE', 'RESUME', 'DELETE', 'TRIGGER', 'BACKFILL'] as const;

type Outcome =
  | { readonly kind: 'applied' | 'duplicate'; readonly type: string }
  | {
      readonly kind: 'rejected';
      readonly code: RejectCode;
      readonly reason: string;
      /** The decoded command, when it was refused on applying (its outcome is then recorded). */
      readonly command?: ScheduleCommand;
    };

class Rejection extends Error {
  constructor(
    readonly code: RejectCode,
    reason: string,
  ) {
    super(reason);
  }
}

export class ScheduleCommandHandler {
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly decode: CommandDecoder,
    private readonly jobs: JobService,
    private readonly reject: RejectedCommandSink,
    private readonly metrics: CommandMetrics,
    private readonly opts: CommandHandlerOptions,
    private readonly forward: CommandForwarder,
  ) {}

  /**
   * Applies a partition batch in order, forwarding misplaced commands (consecutive ones in one
   * send); throws (leaving the rest unmarked) only on trouble that is not a command's fault. A
   * misplaced command's offset is marked only once Kafka has its forwarded copy: a crash in
   * between forwards it again, and the copy that arrives second is a duplicate by its command_id.
   */
  async handleBatch(batch: CommandBatch): Promise<void> {
    let misplaced: MisplacedCommand[] = [];
    const flush = async () => {
      if (misplaced.length === 0) return;
      const run = misplaced;
      misplaced = [];
      await this.forward(run);
      this.metrics.forwarded(run.length);
      const first = run[0]!.message;
      const shards = [...new Set(run.map((m) => m.shard))].sort((a, b) => a - b);
      this.opts.log?.(
        `forwarded ${run.length} command(s) at ${first.topic}/${first.partition}/${first.offset}..${run[run.length - 1]!.message.offset} to their shards' partitions [${shards.join(', ')}] (the producer's partitioner is not murmur2)`,
        'info',
      );
      batch.markProcessed(run[run.length - 1]!.message.offset);
    };
    for (const message of batch.messages) {
      if (!batch.isActive()) return;
      const shard = this.shardOf(message);
      if (shard !== undefined && shard !== message.partition) {
        misplaced.push({ message, shard });
        continue;
      }
      await flush();
      const outcome = await this.handle(message);
      if (outcome.kind === 'rejected') {
        // The outcome is kept first, then the rejection published: a crash in between publishes
        // it again when the command comes back (as a duplicate of a rejected command).
        if (outcome.command) {
          const c = outcome.command;
          await this.jobs.recordCommandRejection(
            { tenantId: c.tenantId, commandId: c.commandId, type: c.type },
            c.jobId,
            outcome.code,
            outcome.reason,
          );
        }
        await this.reject(message, outcome.code, outcome.reason);
        this.metrics.rejected(outcome.code);
        this.opts.log?.(
          `command at ${message.topic}/${message.partition}/${message.offset} rejected (${outcome.code}): ${outcome.reason}`,
          'warn',
        );
      } else if (outcome.kind === 'applied') {
        this.metrics.applied(outcome.type);
      } else {
        this.metrics.duplicate(outcome.type);
      }
      batch.markProcessed(message.offset);
    }
    if (batch.isActive()) await flush();
  }

  /** The shard a message's key maps to; undefined without a key (it is rejected where it is). */
  private shardOf(message: CommandMessage): number | undefined {
    if (!message.key || message.key.length === 0) return undefined;
    return shardOfKey(message.key, this.opts.shardCount);
  }

  private async handle(message: CommandMessage): Promise<Outcome> {
    const where = `${message.topic}/${message.partition}/${message.offset}`;
    let command: ScheduleCommand | undefined;
    try {
      command = await this.read(message);
      const kind = await this.apply(command);
      this.failures.delete(where);
      return { kind, type: command.type };
    } catch (e) {
      const decoded = command ? { command } : {};
      if (e instanceof Rejection) return { kind: 'rejected', code: e.code, reason: e.message, ...decoded };
      const known = this.classify(e);
      if (known) return { kind: 'rejected', ...known, ...decoded };
      // Not the command's fault as far as we can tell: retry, unless the store is fine and this
      // command keeps failing, in which case it is poison of a kind we did not foresee.
      if (!(await this.opts.storeHealthy().catch(() => false))) throw e;
      const n = (this.failures.get(where) ?? 0) + 1;
      this.failures.set(where, n);
      if (n < (this.opts.maxUnexpectedFailures ?? 3)) throw e;
      this.failures.delete(where);
      return {
        kind: 'rejected',
        code: 'INTERNAL',
        reason: `failed ${n} times with the store healthy: ${(e as Error).message}`,
        ...decoded,
      };
    }
  }

  private async read(message: CommandMessage): Promise<ScheduleCommand> {
    if (!message.value || message.value.length === 0)
      throw new Rejection('EMPTY', 'the message has no value (a tombstone is not a command)');
    if (message.value.length > this.opts.maxCommandBytes) {
      throw new Rejection(
        'OVERSIZED',
        `the message is ${message.value.length} bytes; commands are limited to ${this.opts.maxCommandBytes}`,
      );
    }
    const decoded = await this.decode(message.value);
    if (!decoded.ok) throw new Rejection(decoded.failure as RejectCode, decoded.reason);
    const c = decoded.command;
    const bad: string[] = [];
    if (c.commandId.length === 0 || c.commandId.length > 128) bad.push('command_id must be 1-128 characters');
    // The command id keys the command ledger: text PostgreSQL cannot hold would fail every try.
    const idProblem = unstorableTextProblem(c.commandId);
    if (idProblem) bad.push(`command_id ${idProblem}`);
    // Versions start at 1: no job is ever at 0 or below, so such a guard can only be a mistake.
    if (c.expectedVersion !== null && !(Number.isSafeInteger(c.expectedVersion) && c.expectedVersion >= 1))
      bad.push('expected_version must be null or a version (a positive integer)');
    if (!TENANT_ID_PATTERN.test(c.tenantId))
      bad.push('tenant_id must be 1-64 characters of letters, digits, . _ -');
    if (!JOB_ID_PATTERN.test(c.jobId))
      bad.push('job_id must be 1-128 characters of letters, digits, . _ : -');
    if (bad.length > 0) throw new Rejection('INVALID_COMMAND', bad.join('; '));
    const key = message.key?.toString('utf8');
    if (key !== c.jobId) {
      throw new Rejection(
        'KEY_MISMATCH',
        `the message key ${JSON.stringify(key ?? null)} must equal job_id ${JSON.stringify(c.jobId)} (the key decides the shard)`,
      );
    }
    if (!(COMMAND_TYPES as readonly string[]).includes(c.type))
      throw new Rejection('UNKNOWN_TYPE', `command type ${c.type} is not one this version applies`);
    if (c.type === 'UPSERT' && !c.job) throw new Rejection('INVALID_COMMAND', 'job is required for UPSERT');
    if (c.type === 'BACKFILL' && !this.opts.backfills)
      throw new Rejection('UNKNOWN_TYPE', 'command type BACKFILL is not applied by this consumer');
    if (c.type === 'BACKFILL' && !c.backfill)
      throw new Rejection('INVALID_COMMAND', 'backfill is required for BACKFILL');
    return c;
  }

  private async apply(c: ScheduleCommand): Promise<'applied' | 'duplicate'> {
    const caller: Caller = { actor: 'kafka', role: 'tenant', tenantId: c.tenantId, via: 'kafka' };
    const stamp = { tenantId: c.tenantId, commandId: c.commandId, type: c.type };
    try {
      switch (c.type) {
        case 'UPSERT':
          await this.jobs.upsertJob(caller, c.jobId, c.job ?? {}, stamp, c.expectedVersion);
          break;
        case 'PAUSE':
          await this.jobs.pauseJob(caller, c.jobId, stamp);
          break;
        case 'RESUME':
          await this.jobs.resumeJob(caller, c.jobId, stamp);
          break;
        case 'DELETE':
          await this.jobs.deleteJob(caller, c.jobId, {
            command: stamp,
            ...(c.expectedVersion !== null ? { expectedVersion: c.expectedVersion } : {}),
          });
          break;
        case 'TRIGGER':
          await this.jobs.triggerJob(caller, c.jobId, stamp);
          break;
        case 'BACKFILL':
          try {
            await this.opts.backfills!.create(caller, c.jobId, c.backfill ?? {}, stamp);
          } catch (e) {
            // The request's fields are the command's backfill record, not a job definition.
            if (e instanceof ValidationError)
              throw new Rejection(
                'INVALID_COMMAND',
                e.violations.map((v) => `backfill.${v.field}: ${v.message}`).join('; '),
              );
            throw e;
          }
          break;
      }
      return 'applied';
    } catch (e) {
      if (!(e instanceof DuplicateCommandError)) throw e;
      if (e.outcome === 'APPLIED') return 'duplicate';
      // A copy of a command that was rejected: rejected again (its first rejection stands).
      throw new Rejection(e.outcome as RejectCode, `rejected before, as ${e.outcome}: ${e.reason ?? ''}`);
    }
  }

  /** Errors that are the command's fault, with their reject code; undefined for anything else. */
  private classify(e: unknown): { code: RejectCode; reason: string } | undefined {
    if (e instanceof ValidationError)
      return {
        code: 'INVALID_JOB',
        reason: e.violations.map((v) => `job.${v.field}: ${v.message}`).join('; '),
      };
    if (e instanceof JobNotFoundError) {
      return e.ownedByAnotherTenant
        ? { code: 'CROSS_TENANT', reason: `job ${e.jobId} belongs to another tenant` }
        : { code: 'NOT_FOUND', reason: e.message };
    }
    const code = errorCodeOf(e);
    if (code === 'FAILED_PRECONDITION') return { code: 'FAILED_PRECONDITION', reason: (e as Error).message };
    if (code === 'RESOURCE_EXHAUSTED') return { code: 'QUOTA_EXCEEDED', reason: (e as Error).message };
    if (code === 'ALREADY_EXISTS') return { code: 'ALREADY_EXISTS', reason: (e as Error).message };
    if (code === 'NOT_FOUND') return { code: 'NOT_FOUND', reason: (e as Error).message };
    return undefined;
  }
}
