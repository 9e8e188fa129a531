/**
 * kafkajs 2.2.4 frames every request (size, API key and version, correlation id, client id, then
 * the body) by copying the encoded body twice, into two encoders that each start at 512
 * zero-filled bytes and double, copying again, up to the request's size. For a produce request
 * of a few hundred KB that was most of the cost of sending it. This frames it in one buffer of
 * the exact size, byte for byte as kafkajs does. kafkajs's connection captures the module when
 * kafkajs is first required, so this file is imported ahead of kafkajs by kafkajs-bus.ts.
 */
import { standInModule } from './module-stand-in';

/** kafkajs's module that frames a request for the wire. */
export const REQUEST_MODULE = 'kafkajs/src/protocol/request';

/** What kafkajs's connection passes to the framing. */
export interface FramingArgs {
  readonly correlationId: number;
  readonly clientId: string | null | undefined;
  readonly request: {
    readonly apiKey: number;
    readonly apiVersion: number;
    encode(): Promise<{ readonly buffer: Buffer }> | { readonly buffer: Buffer };
  };
}

/** The framed request, shaped as kafkajs's Encoder as far as its connection reads it. */
export async function frameRequest({
  correlationId,
  clientId,
  request: { apiKey, apiVersion, encode },
}: FramingArgs): Promise<{ readonly buf: Buffer; readonly buffer: Buffer }> {
  const body = (await encode()).buffer;
  const client = clientId == null ? null : Buffer.from(clientId, 'utf8');
  const size = 2 + 2 + 4 + 2 + (client?.length ?? 0) + body.length;
  const buf = Buffer.allocUnsafe(4 + size);
  let at = buf.writeInt32BE(size, 0);
  at = buf.writeInt16BE(apiKey, at);
  at = buf.writeInt16BE(apiVersion, at);
  at = buf.writeInt32BE(correlationId, at);
  if (client === null) at = buf.writeInt16BE(-1, at);
  else {
    at = buf.writeInt16BE(client.length, at);
    at += client.copy(buf, at);
  }
  body.copy(buf, at);
  return { buf, buffer: buf };
}

/**
 * Makes kafkajs's connections frame requests with `frameRequest`, once per process. False if
 * kafkajs's connection was loaded already: its own framing then stays in use (correct, slower).
 */
export function leanRequestFraming(): boolean {
  return standInModule(REQUEST_MODULE, () => frameRequest, ['kafkajs/src/network/connection']);
}
