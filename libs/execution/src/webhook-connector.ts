/**
 * The undici connector that enforces the destination guard at connection time, in three layers:
 * an IP-literal host is checked before connecting; a host name is resolved by our own lookup
 * hook, which refuses it if any address it resolves to is refused; and once connected, the
 * socket's remote address (the address really reached) is checked again before a byte of the
 * request is written. Checking at connect time rather than on the URL closes DNS rebinding.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP } from 'node:net';
import { buildConnector } from 'undici';
import { DestinationRefusedError, type DestinationGuard } from './destination-guard';

/** Resolves every address of a host name (dns.lookup with all: true, or a test double). */
export type Resolver = (
  hostname: string,
  options: LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** A `lookup` for net.connect that resolves the name itself and refuses forbidden addresses. */
export function guardedLookup(guard: DestinationGuard, resolve: Resolver = dnsLookup as Resolver) {
  return (
    hostname: string,
    options: number | { family?: number | string; all?: boolean } | undefined,
    callback: LookupCallback,
  ): void => {
    const opts = typeof options === 'object' && options !== null ? options : {};
    const family = typeof options === 'number' ? options : opts.family;
    const wantFamily = family === 4 || family === 'IPv4' ? 4 : family === 6 || family === 'IPv6' ? 6 : 0;
    resolve(hostname, { all: true, family: wantFamily }, (err, addresses) => {
      if (err) return callback(err, []);
      if (addresses.length === 0)
        return callback(
          Object.assign(new Error(`${hostname} resolved to no address`), { code: 'ENOTFOUND' }),
          [],
        );
      try {
        // Refuse the name if any of its addresses is refused: which one net.connect picks is not ours to choose.
        for (const a of addresses) guard.check(hostname, a.address);
      } catch (e) {
        return callback(e as NodeJS.ErrnoException, []);
      }
      if (opts.all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}

/** An undici connector that only hands out sockets connected to allowed addresses. */
export function guardedConnector(
  guard: DestinationGuard,
  opts: { connectTimeoutMs: number; resolve?: Resolver },
): buildConnector.connector {
  const base = buildConnector({ timeout: opts.connectTimeoutMs, lookup: guardedLookup(guard, opts.resolve) });
  return (options, callback) => {
    const host = options.hostname.startsWith('[') ? options.hostname.slice(1, -1) : options.hostname;
    if (isIP(host)) {
      try {
        guard.check(host, host);
      } catch (e) {
        callback(e as Error, null);
        return;
      }
    }
    base(options, (err, socket) => {
      if (err) {
        callback(err, null);
        return;
      }
      const remote = socket?.remoteAddress;
      try {
        if (!socket || !remote) throw new DestinationRefusedError(host, '', 'unresolved');
        guard.check(host, remote);
      } catch (e) {
        socket?.destroy();
        callback(e as Error, null);
        return;
      }
      callback(null, socket);
    });
  };
}
