/**
 * The kafkajs patches, installed in one place. Each is written against kafkajs's internals at one
 * release, so installation first checks that release is the one loaded, and reports which patches
 * took effect: a module stand-in does not when kafkajs (or the module that captures it) was
 * loaded before, and kafkajs then still works, at stock speed. Nothing is patched on import.
 */
import { usePausedFetchWait } from './fetch-wait';
import { installStaticMembership, keepGroupMembersAcrossRestarts } from './group-membership';
import { retryGroupJoins } from './join-retry';
import { linearPartitionGrouping } from './partition-grouping';
import { leanProduceRequests } from './produce-request';
import { leanRecordDecoding } from './record-decoder';
import { sizeRecordBuffers } from './record-encoding';
import { leanRequestFraming } from './request-framing';
import { fixIdleRequestQueueLoop } from './request-queue-idle';

/** The kafkajs release the patches were written against: the exact version pinned in package.json. */
export const KAFKAJS_VERSION = '2.2.4';

/**
 * Every patch, in the order they must be installed: the module stand-ins before any kafkajs module
 * that captures theirs loads (record encoding before the produce request that captures it), then
 * the prototype patches, which load the classes they patch.
 */
const PATCHES = {
  /** Decodes a fetched record without kafkajs's intermediate objects (record-decoder.ts). */
  'record-decoding': leanRecordDecoding,
  /** Frames a request into one buffer (request-framing.ts). */
  'request-framing': leanRequestFraming,
  /** Groups a send's messages per partition in one pass (partition-grouping.ts). */
  'partition-grouping': linearPartitionGrouping,
  /** Sizes a record's buffer once (record-encoding.ts). */
  'record-encoding': sizeRecordBuffers,
  /** Encodes a produce request's record batches directly (produce-request.ts). */
  'produce-request': leanProduceRequests,
  /** No 1 ms timer loop on an idle connection; a 1 s timeout sweep (request-queue-idle.ts). */
  'request-queue-idle': fixIdleRequestQueueLoop,
  /** A shorter fetch wait while some partitions are paused (fetch-wait.ts). */
  'paused-fetch-wait': usePausedFetchWait,
  /** A restarted consumer rejoins with its member id (group-membership.ts). */
  'group-member-id': keepGroupMembersAcrossRestarts,
  /** Static group membership, KIP-345 (group-membership.ts). */
  'static-membership': installStaticMembership,
  /** A join waits out a loading or moving coordinator instead of crashing (join-retry.ts). */
  'join-retry': retryGroupJoins,
} as const satisfies Record<string, () => boolean>;

export type KafkajsPatch = keyof typeof PATCHES;

/** The names of every kafkajs patch, in installation order. */
export const KAFKAJS_PATCHES = Object.keys(PATCHES) as readonly KafkajsPatch[];

/** What installKafkajsPatches did: the kafkajs version loaded and, per patch, whether it took effect. */
export interface KafkajsPatchReport {
  readonly kafkajsVersion: string;
  readonly applied: Readonly<Record<KafkajsPatch, boolean>>;
}

/** Where installKafkajsPatches writes its one line about the patches. */
export type PatchLogger = (level: 'info' | 'warn', message: string, extra: Record<string, unknown>) => void;

/** Throws unless `found` is the kafkajs release the patches were written against. */
export function assertKafkajsVersion(found: string): void {
  if (found !== KAFKAJS_VERSION)
    throw new Error(
      `kafkajs ${found} is loaded, but Tickwork's kafkajs patches are written against ${KAFKAJS_VERSION}: ` +
        'review libs/messaging/src/kafkajs/ against the new release, then update KAFKAJS_VERSION',
    );
}

let report: KafkajsPatchReport | undefined;

/**
 * Installs every kafkajs patch, once per process, and returns which took effect (later calls
 * return the same report). Call it before anything loads kafkajs: createKafkaBus does. Logs one
 * line, at warn when a patch did not take effect.
 */
export function installKafkajsPatches(log?: PatchLogger): KafkajsPatchReport {
  if (report) return report;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the manifest only: loads no kafkajs code
  const { version } = require('kafkajs/package.json') as { version: string };
  assertKafkajsVersion(version);
  const applied = Object.fromEntries(KAFKAJS_PATCHES.map((name) => [name, PATCHES[name]()])) as Record<
    KafkajsPatch,
    boolean
  >;
  report = Object.freeze({ kafkajsVersion: version, applied: Object.freeze(applied) });
  const missed = KAFKAJS_PATCHES.filter((name) => !applied[name]);
  if (missed.length === 0)
    log?.('info', `kafkajs ${version}: all ${KAFKAJS_PATCHES.length} patches took effect`, {
      patches: applied,
    });
  else
    log?.(
      'warn',
      `kafkajs ${version}: patches ${missed.join(', ')} did not take effect (kafkajs was loaded before ` +
        'installKafkajsPatches); those paths run at stock kafkajs speed',
      { patches: applied },
    );
  return report;
}

/** The report of the installation in this process, or undefined before installKafkajsPatches ran. */
export function kafkajsPatchReport(): KafkajsPatchReport | undefined {
  return report;
}
