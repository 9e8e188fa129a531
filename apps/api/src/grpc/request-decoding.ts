/**
 * Requests that cannot be decoded (bytes that are not the message, a google.protobuf.Value nested
 * past protobuf's 100-message limit) are the caller's fault: grpc-js answers any deserializer error
 * with INTERNAL, so the deserializers here never throw. They hand the handler a marker instead, and
 * the controller refuses it with INVALID_ARGUMENT naming `request`.
 */
import type { PackageDefinition } from '@grpc/proto-loader';

const UNDECODABLE = Symbol('tickwork.undecodable-request');

/** Wraps every method's request deserializer in the package definition (before services are made from it). */
export function tolerateUndecodableRequests(pkg: PackageDefinition): void {
  for (const service of Object.values(pkg)) {
    if (!service || typeof service !== 'object' || 'format' in service) continue; // a message or enum type
    for (const method of Object.values(service as Record<string, { requestDeserialize?: unknown }>)) {
      const deserialize = method?.requestDeserialize;
      if (typeof deserialize !== 'function') continue;
      method.requestDeserialize = (bytes: Buffer): unknown => {
        try {
          return (deserialize as (b: Buffer) => unknown)(bytes);
        } catch (e) {
          return { [UNDECODABLE]: (e as Error).message };
        }
      };
    }
  }
}

/** Why the request could not be decoded, or undefined for a decoded one. */
export function undecodableRequest(request: unknown): string | undefined {
  if (!request || typeof request !== 'object') return undefined;
  const reason = (request as { [UNDECODABLE]?: unknown })[UNDECODABLE];
  return typeof reason === 'string' ? reason : undefined;
}
