import type { LookupAddress } from 'node:dns';
import {
  classifyAddress,
  DestinationGuard,
  DestinationRefusedError,
  parseAllowList,
  parseCidr,
} from './destination-guard';
import { guardedConnector, guardedLookup, type Resolver } from './webhook-connector';

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['169.254.10.1', 'link-local'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.5', 'documentation'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fd00:ec2::254', 'metadata'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:10.0.0.1', 'private'],
    ['[::ffff:192.168.0.1]', 'private'],
    ['::127.0.0.1', 'reserved'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::8.8.8.8', 'public'],
    ['2002:0a00:0001::1', 'private'],
    ['2002:0808:0808::1', 'public'],
    ['4000::1', 'reserved'],
    ['8.8.8.8', 'public'],
    ['1.1.1.1', 'public'],
    ['172.32.0.1', 'public'],
    ['100.128.0.1', 'public'],
    ['2606:4700:4700::1111', 'public'],
    ['::ffff:8.8.8.8', 'public'],
  ])('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });

  it('refuses to classify something that is not an address', () => {
    expect(() => classifyAddress('example.com')).toThrow(/not an IP address/);
  });
});

describe('parseCidr and parseAllowList', () => {
  it('parses CIDRs and bare addresses, and rejects malformed ones', () => {
    expect(parseCidr('10.0.0.0/8')).toMatchObject({ version: 4, prefix: 8 });
    expect(parseCidr('127.0.0.1')).toMatchObject({ version: 4, prefix: 32 });
    expect(parseCidr('fd00::/8')).toMatchObject({ version: 6, prefix: 8 });
    expect(parseCidr('10.0.0.0/33')).toBeNull();
    expect(parseCidr('10.0.0/8')).toBeNull();
    expect(parseCidr('10.0.0.0/8/1')).toBeNull();
  });

  it('names a bad entry', () => {
    expect(() => parseAllowList(['localhost', 'bad host!'])).toThrow(
      /TICKWORK_WEBHOOK_ALLOW has "bad host!"/,
    );
  });
});

describe('DestinationGuard', () => {
  const refusedClass = (guard: DestinationGuard, host: string, address: string) => {
    try {
      guard.check(host, address);
      return 'allowed';
    } catch (e) {
      expect(e).toBeInstanceOf(DestinationRefusedError);
      return (e as DestinationRefusedError).addressClass;
    }
  };

  it('refuses every non-public address by default, naming its class', () => {
    const guard = new DestinationGuard();
    expect(refusedClass(guard, 'example.com', '127.0.0.1')).toBe('loopback');
    expect(refusedClass(guard, 'example.com', '10.0.0.7')).toBe('private');
    expect(refusedClass(guard, 'example.com', '169.254.169.254')).toBe('metadata');
    expect(refusedClass(guard, 'example.com', '::ffff:127.0.0.1')).toBe('loopback');
    expect(refusedClass(guard, 'example.com', '93.184.216.34')).toBe('allowed');
  });

  it('opens exactly the allow-listed CIDRs, also for their IPv4-mapped form', () => {
    const guard = new DestinationGuard(parseAllowList(['10.1.0.0/16', '127.0.0.1']));
    expect(refusedClass(guard, 'svc', '10.1.2.3')).toBe('allowed');
    expect(refusedClass(guard, 'svc', '10.2.0.1')).toBe('private');
    expect(refusedClass(guard, '127.0.0.1', '127.0.0.1')).toBe('allowed');
    expect(refusedClass(guard, 'svc', '::ffff:127.0.0.1')).toBe('allowed');
    expect(refusedClass(guard, 'svc', '127.0.0.2')).toBe('loopback');
    expect(refusedClass(guard, 'svc', '169.254.169.254')).toBe('metadata');
  });

  it('opens allow-listed host names and *.domain, whatever they resolve to', () => {
    const guard = new DestinationGuard(parseAllowList(['localhost', '*.internal.example']));
    expect(refusedClass(guard, 'localhost', '127.0.0.1')).toBe('allowed');
    expect(refusedClass(guard, 'LOCALHOST.', '::1')).toBe('allowed');
    expect(refusedClass(guard, 'a.internal.example', '10.0.0.1')).toBe('allowed');
    expect(refusedClass(guard, 'internal.example', '10.0.0.1')).toBe('private');
    expect(refusedClass(guard, 'evil-localhost', '127.0.0.1')).toBe('loopback');
  });
});

describe('guardedLookup', () => {
  const resolverOf =
    (table: Record<string, LookupAddress[]>): Resolver =>
    (hostname, _opts, cb) =>
      setImmediate(() =>
        table[hostname]
          ? cb(null, table[hostname])
          : cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []),
      );
  const lookup = (guard: DestinationGuard, resolve: Resolver, host: string, all: boolean) =>
    new Promise<{ err: Error | null; address: unknown }>((resolve_) =>
      guardedLookup(guard, resolve)(host, { all }, (err, address) => resolve_({ err, address })),
    );

  const dns = resolverOf({
    'public.test': [{ address: '93.184.216.34', family: 4 }],
    'rebind.test': [
      { address: '93.184.216.34', family: 4 },
      { address: '169.254.169.254', family: 4 },
    ],
    'internal.test': [{ address: '10.0.0.5', family: 4 }],
    'mapped.test': [{ address: '::ffff:127.0.0.1', family: 6 }],
  });

  it('passes a name that resolves to public addresses, in both lookup shapes', async () => {
    const guard = new DestinationGuard();
    expect(await lookup(guard, dns, 'public.test', true)).toEqual({
      err: null,
      address: [{ address: '93.184.216.34', family: 4 }],
    });
    expect(await lookup(guard, dns, 'public.test', false)).toEqual({ err: null, address: '93.184.216.34' });
  });

  it('refuses a name if any of its addresses is refused', async () => {
    const guard = new DestinationGuard();
    const r = await lookup(guard, dns, 'rebind.test', true);
    expect(r.err).toBeInstanceOf(DestinationRefusedError);
    expect(r.err?.message).toMatch(/169\.254\.169\.254 is a metadata address/);
    expect((await lookup(guard, dns, 'internal.test', false)).err).toBeInstanceOf(DestinationRefusedError);
    expect((await lookup(guard, dns, 'mapped.test', true)).err).toBeInstanceOf(DestinationRefusedError);
  });

  it('lets an allow-listed CIDR through and passes resolver errors on', async () => {
    const guard = new DestinationGuard(parseAllowList(['10.0.0.0/24']));
    expect((await lookup(guard, dns, 'internal.test', true)).err).toBeNull();
    expect((await lookup(guard, dns, 'nowhere.test', true)).err?.message).toMatch(/ENOTFOUND/);
  });
});

describe('guardedConnector', () => {
  const connect = (guard: DestinationGuard, hostname: string, resolve?: Resolver) =>
    new Promise<Error | null>((done) =>
      guardedConnector(guard, { connectTimeoutMs: 1_000, ...(resolve ? { resolve } : {}) })(
        { hostname, protocol: 'http:', port: '9' },
        (err, socket) => {
          socket?.destroy();
          done(err);
        },
      ),
    );

  it('refuses an IP-literal host before connecting', async () => {
    const guard = new DestinationGuard();
    for (const host of ['127.0.0.1', '10.0.0.1', '169.254.169.254', '[::1]', '[::ffff:127.0.0.1]']) {
      const err = await connect(guard, host);
      expect(err).toBeInstanceOf(DestinationRefusedError);
    }
  });

  it('refuses a host name through the lookup hook', async () => {
    const resolve: Resolver = (_h, _o, cb) =>
      setImmediate(() => cb(null, [{ address: '127.0.0.1', family: 4 }]));
    expect(await connect(new DestinationGuard(), 'sneaky.test', resolve)).toBeInstanceOf(
      DestinationRefusedError,
    );
  });
});
