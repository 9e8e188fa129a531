/** google.rpc.Status with google.rpc.BadRequest details, encoded for the `grpc-status-details-bin` trailer. */
import { resolve } from 'node:path';
import { Root, type Type } from 'protobufjs';
import type { FieldViolation } from '@tickwork/domain';
import { protoDirectory } from './proto-files';

let types: { status: Type; badRequest: Type } | undefined;

function load(): { status: Type; badRequest: Type } {
  if (!types) {
    const root = new Root();
    root.resolvePath = (_origin, target) => resolve(protoDirectory(), target);
    root.loadSync(['google/rpc/status.proto', 'google/rpc/error_details.proto']);
    types = {
      status: root.lookupType('google.rpc.Status'),
      badRequest: root.lookupType('google.rpc.BadRequest'),
    };
  }
  return types;
}

/** Serialized google.rpc.Status{code, message, details: [Any(BadRequest{field_violations})]}. */
export function badRequestDetails(
  code: number,
  message: string,
  violations: readonly FieldViolation[],
): Buffer {
  const { status, badRequest } = load();
  const detail = badRequest
    .encode(
      badRequest.fromObject({
        fieldViolations: violations.map((v) => ({ field: v.field, description: v.message })),
      }),
    )
    .finish();
  const body = status.fromObject({
    code,
    message,
    details: [{ type_url: 'type.googleapis.com/google.rpc.BadRequest', value: detail }],
  });
  return Buffer.from(status.encode(body).finish());
}

/** Decodes a `grpc-status-details-bin` value back into its field violations (for clients and tests). */
export function decodeBadRequest(bin: Buffer): {
  code: number;
  message: string;
  violations: FieldViolation[];
} {
  const { status, badRequest } = load();
  const s = status.toObject(status.decode(bin), { defaults: true }) as {
    code: number;
    message: string;
    details: { type_url: string; value: Uint8Array }[];
  };
  const violations: FieldViolation[] = [];
  for (const d of s.details) {
    if (d.type_url !== 'type.googleapis.com/google.rpc.BadRequest') continue;
    const br = badRequest.toObject(badRequest.decode(d.value), { defaults: true }) as {
      fieldViolations: { field: string; description: string }[];
    };
    violations.push(...br.fieldViolations.map((v) => ({ field: v.field, message: v.description })));
  }
  return { code: s.code, message: s.message, violations };
}
