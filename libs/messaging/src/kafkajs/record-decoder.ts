/**
 * kafkajs 2.2.4 decodes every fetched record's timestamp and offset with its 64-bit `Long`: it
 * parses the batch's base values from decimal strings and prints the sums back, per record. It
 * gathers the headers with an object spread per header, quadratic in a record's headers. This is
 * the same decoding, returning the same record, with plain numbers where they are exact (beyond
 * 2^53 it falls back to `Long`) and one object for the headers. It differs from kafkajs's only for
 * a header named after a member of Object.prototype (`constructor`, `toString`, ...), whose
 * inherited value kafkajs mixes into the header's values. kafkajs's record-batch decoder
 * captures the module when kafkajs is first required, so this file is imported ahead of kafkajs
 * by kafkajs-bus.ts.
 */
import { standInModule } from './module-stand-in';

/** kafkajs's module that decodes one record of a record batch. */
export const RECORD_DECODER_MODULE = 'kafkajs/src/protocol/recordBatch/record/v0/decoder';

/** kafkajs's 64-bit integer, as far as the fallback uses it. */
interface LongValue {
  add(other: LongValue | number | string): LongValue;
  toString(): string;
}
interface LongClass {
  fromValue(value: string | number): LongValue;
}

/** The parts of kafkajs's protocol Decoder a record is read with. */
export interface RecordInput {
  buffer: Buffer;
  offset: number;
  readInt8(): number;
  readVarInt(): number;
  readVarLong(): LongValue;
  readVarIntBytes(): Buffer | null;
  readVarIntString(): string | null;
}

/** What kafkajs's record-batch decoder passes along with every record of the batch. */
export interface BatchContext {
  readonly firstOffset: string;
  readonly firstTimestamp: string;
  readonly magicByte?: number;
  readonly isControlBatch?: boolean;
  readonly timestampType?: number;
  readonly maxTimestamp?: string;
}

const LOG_APPEND_TIME = 1;

// eslint-disable-next-line @typescript-eslint/no-require-imports
const Long = require('kafkajs/src/utils/long') as LongClass;

/** A decimal string as a number, when the number is exactly that string; else undefined. */
function exactNumber(s: string): number | undefined {
  const n = Number(s);
  return Number.isSafeInteger(n) && String(n) === s ? n : undefined;
}

/** The batch's base offset and timestamp as numbers, parsed once per batch. */
let lastContext: BatchContext | undefined;
let baseOffset: number | undefined;
let baseTimestamp: number | undefined;

/** `base + delta` as kafkajs prints it, through numbers when both are exact. */
function sum(base: number | undefined, baseText: string, delta: number | LongValue): string {
  if (base !== undefined && typeof delta === 'number') {
    const n = base + delta;
    if (Number.isSafeInteger(n)) return String(n);
  }
  return Long.fromValue(baseText).add(delta).toString();
}

/**
 * A zig-zag varlong as a number while it fits in 49 bits (7 bytes; a timestamp delta within a
 * batch takes 1–4), else as kafkajs's Long, read again from the same place.
 */
function readVarLong(decoder: RecordInput): number | LongValue {
  const start = decoder.offset;
  const buf = decoder.buffer;
  let raw = 0;
  let scale = 1;
  for (let i = 0; i < 7; i++) {
    const byte = buf[decoder.offset++]!;
    raw += (byte & 0x7f) * scale;
    if (byte < 0x80) return raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2;
    scale *= 128;
  }
  decoder.offset = start;
  return decoder.readVarLong();
}

/** Decodes one record: the same object kafkajs's own record decoder returns. */
export function decodeRecord(decoder: RecordInput, batchContext: BatchContext = {} as BatchContext) {
  const {
    firstOffset,
    firstTimestamp,
    magicByte,
    isControlBatch = false,
    timestampType,
    maxTimestamp,
  } = batchContext;
  if (batchContext !== lastContext) {
    lastContext = batchContext;
    baseOffset = typeof firstOffset === 'string' ? exactNumber(firstOffset) : undefined;
    baseTimestamp = typeof firstTimestamp === 'string' ? exactNumber(firstTimestamp) : undefined;
  }
  const attributes = decoder.readInt8();
  const timestampDelta = readVarLong(decoder);
  const timestamp =
    timestampType === LOG_APPEND_TIME && maxTimestamp
      ? maxTimestamp
      : sum(baseTimestamp, firstTimestamp, timestampDelta);
  const offset = sum(baseOffset, firstOffset, decoder.readVarInt());
  const key = decoder.readVarIntBytes();
  const value = decoder.readVarIntBytes();

  const headers: Record<string, Buffer | null | (Buffer | null)[]> = {};
  const count = decoder.readVarInt();
  for (let i = 0; i < count; i++) {
    const name = String(decoder.readVarIntString());
    const headerValue = decoder.readVarIntBytes();
    const previous = Object.prototype.hasOwnProperty.call(headers, name) ? headers[name] : undefined;
    const merged =
      previous === undefined
        ? headerValue
        : Array.isArray(previous)
          ? previous.concat([headerValue])
          : [previous, headerValue];
    if (name !== '__proto__') headers[name] = merged;
    // A header named "__proto__" is a key like any other, not the object's prototype.
    else
      Object.defineProperty(headers, name, {
        value: merged,
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }

  return {
    magicByte,
    attributes,
    timestamp,
    offset,
    key,
    value,
    headers,
    isControlRecord: isControlBatch,
    batchContext,
  };
}

/**
 * Makes kafkajs's consumers decode records with `decodeRecord`, once per process. False if
 * kafkajs's record-batch decoder was loaded already: its own then stays in use (correct, slower).
 */
export function leanRecordDecoding(): boolean {
  return standInModule(RECORD_DECODER_MODULE, () => decodeRecord, [
    'kafkajs/src/protocol/recordBatch/v0/decoder',
  ]);
}
