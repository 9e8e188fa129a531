/**
 * The webhook target against a real local HTTP server: request shape, Standard Webhooks
 * signatures, status classification, Retry-After, the hard timeout, no redirects, and the SSRF
 * guard on the address really connected to (literal IPs, localhost through the system resolver,
 * and the allow-list).
 */
import { createHmac } from 'node:crypto';
import type { WebhookTarget } from '@tickwork/domain';
import {
  DestinationGuard,
  parseAllowList,
  WebhookRunner,
  WebhookSigner,
  type AttemptOutcome,
  type TargetRequest,
} from '@tickwork/execution';
import { ScriptedReceiver } from '../e2e/executor-harness';

const SECRET_A = `whsec_${Buffer.alloc(32, 0xa1).toString('base64')}`;
const SECRET_B = `whsec_${Buffer.alloc(32, 0xb2).toString('base64')}`;

function target(url: string, extra: Partial<WebhookTarget> = {}): WebhookTarget {
  return {
    type: 'webhook',
    url,
    method: 'POST',
    headers: {},
    timeoutMs: 2_000,
    successStatus: { min: 200, max: 299 },
    ...extra,
  };
}

const request: TargetRequest = {
  jobId: 'job-1',
  tenantId: 'acme',
  fenceToken: 7,
  fireId: 'job-1:7',
  scheduledFor: new Date('2026-05-01T10:00:00Z'),
  attempt: 2,
  body: '{"hello":"world"}',
};

describe('webhook target', () => {
  let receiver: ScriptedReceiver;
  let open: WebhookRunner; // allow-lists the receiver
  let strict: WebhookRunner; // the default: nothing private
  const never = new AbortController().signal;

  beforeAll(async () => {
    receiver = await new ScriptedReceiver().start();
    const signer = new WebhookSigner({ acme: [SECRET_A, SECRET_B] });
    open = new WebhookRunner({
      guard: new DestinationGuard(parseAllowList(['127.0.0.1'])),
      signer,
      connectionsPerOrigin: 8,
    });
    strict = new WebhookRunner({ guard: new DestinationGuard(), signer, connectionsPerOrigin: 8 });
  });
  afterAll(async () => {
    await Promise.all([open?.close(), strict?.close()]);
    await receiver?.stop();
  });
  beforeEach(() => {
    receiver.calls.length = 0;
    receiver.script = () => ({ status: 200 });
  });

  it('sends method, headers, body and two verifiable Standard Webhooks signatures', async () => {
    const out = await open.run(
      target(receiver.url('/hook?x=1'), {
        method: 'PUT',
        headers: { 'x-team': 'blue', 'webhook-id': 'forged', connection: 'close' },
      }),
      request,
      never,
    );
    expect(out).toEqual({ ok: true, httpStatus: 200, error: null, retryable: false });
    const call = receiver.calls[0]!;
    expect(call).toMatchObject({ method: 'PUT', path: '/hook?x=1', body: '{"hello":"world"}' });
    expect(call.headers).toMatchObject({
      'content-type': 'application/json',
      'x-team': 'blue',
      'tickwork-job-id': 'job-1',
      'tickwork-fence-token': '7',
      'tickwork-attempt': '2',
      'tickwork-scheduled-for': '2026-05-01T10:00:00.000Z',
      'webhook-id': 'job-1:7',
    });
    const ts = Number(call.headers['webhook-timestamp']);
    expect(Math.abs(ts - Date.now() / 1000)).toBeLessThan(5);
    // Verified the way a receiver's library does: HMAC over id.timestamp.body with each secret.
    const expected = [SECRET_A, SECRET_B].map(
      (s) =>
        `v1,${createHmac('sha256', Buffer.from(s.slice(6), 'base64'))
          .update(`job-1:7.${ts}.${call.body}`)
          .digest('base64')}`,
    );
    expect(String(call.headers['webhook-signature']).split(' ')).toEqual(expected);
  });

  it('sends no body with GET; a tenant without secrets gets no signature', async () => {
    await open.run(target(receiver.url(), { method: 'GET' }), { ...request, tenantId: 'globex' }, never);
    const call = receiver.calls[0]!;
    expect(call.method).toBe('GET');
    expect(call.body).toBe('');
    expect(call.headers['webhook-signature']).toBeUndefined();
    expect(call.headers['webhook-id']).toBe('job-1:7');
  });

  it('classifies statuses: success range, retryable 5xx/408/429 with Retry-After, final 4xx', async () => {
    const statusOf = async (
      status: number,
      headers: Record<string, string> = {},
      t = target(receiver.url()),
    ): Promise<AttemptOutcome> => {
      receiver.script = () => ({ status, headers });
      return open.run(t, request, never);
    };
    expect(await statusOf(204)).toMatchObject({ ok: true, httpStatus: 204 });
    expect(
      await statusOf(302, {}, target(receiver.url(), { successStatus: { min: 200, max: 399 } })),
    ).toMatchObject({ ok: true, httpStatus: 302 });
    expect(await statusOf(503)).toEqual({ ok: false, httpStatus: 503, error: 'HTTP 503', retryable: true });
    expect(await statusOf(408)).toMatchObject({ retryable: true });
    expect(await statusOf(429, { 'retry-after': '7' })).toMatchObject({
      ok: false,
      httpStatus: 429,
      retryable: true,
      retryAfterMs: 7_000,
    });
    const inTwoMinutes = new Date(Date.now() + 120_000).toUTCString();
    const dated = await statusOf(429, { 'retry-after': inTwoMinutes });
    expect(dated.retryAfterMs).toBeGreaterThan(110_000);
    expect(dated.retryAfterMs).toBeLessThanOrEqual(120_000);
    expect(await statusOf(400)).toEqual({ ok: false, httpStatus: 400, error: 'HTTP 400', retryable: false });
    expect(await statusOf(404)).toMatchObject({ retryable: false });
  });

  it('does not follow a redirect, not even to an allowed place, let alone to the metadata address', async () => {
    receiver.script = (c) =>
      c.path === '/hook'
        ? { status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data/' } }
        : { status: 200 };
    const out = await open.run(target(receiver.url()), request, never);
    expect(out).toMatchObject({ ok: false, httpStatus: 302, retryable: false });
    expect(out.error).toContain(
      'redirects are not followed (location: http://169.254.169.254/latest/meta-data/)',
    );
    receiver.script = (c) =>
      c.path === '/hook'
        ? { status: 307, headers: { location: receiver.url('/elsewhere') } }
        : { status: 200 };
    await open.run(target(receiver.url()), request, never);
    expect(receiver.calls.map((c) => c.path)).toEqual(['/hook', '/hook']);
  });

  it('cuts a hanging webhook at its timeout (retryable) and frees the connection', async () => {
    receiver.script = () => 'hold';
    const started = Date.now();
    const out = await open.run(target(receiver.url(), { timeoutMs: 300 }), request, never);
    const took = Date.now() - started;
    expect(out).toMatchObject({ ok: false, httpStatus: null, retryable: true });
    expect(out.error).toMatch(/^TIMEOUT/);
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(2_000);
    receiver.release();
  });

  it('aborts a call when its signal fires (lease lost), and says so', async () => {
    receiver.script = () => 'hold';
    const lease = new AbortController();
    setTimeout(() => lease.abort(), 100);
    const out = await open.run(target(receiver.url(), { timeoutMs: 5_000 }), request, lease.signal);
    expect(out).toMatchObject({ ok: false, aborted: true });
    receiver.release();
  });

  it('refuses loopback, private and metadata destinations by default, without connecting', async () => {
    for (const url of [
      receiver.url(),
      `http://10.1.2.3:${receiver.port}/hook`,
      'http://169.254.169.254/latest/meta-data/',
      `http://[::ffff:127.0.0.1]:${receiver.port}/`,
      `http://[::1]:${receiver.port}/`,
    ]) {
      const started = Date.now();
      const out = await strict.run(target(url), request, never);
      expect(out).toMatchObject({ ok: false, retryable: false, refused: true });
      expect(out.error).toMatch(/^destination .* refused: .* is a (loopback|private|metadata) address/);
      expect(Date.now() - started).toBeLessThan(500); // refused before any connection attempt (10.x would hang)
    }
    expect(receiver.calls).toHaveLength(0);
  });

  it('refuses a host name that resolves to loopback (localhost through the system resolver)', async () => {
    const out = await strict.run(target(receiver.url('/hook', 'localhost')), request, never);
    expect(out).toMatchObject({ ok: false, refused: true, retryable: false });
    expect(out.error).toMatch(/destination localhost refused: (127\.0\.0\.1|::1) is a loopback address/);
    expect(receiver.calls).toHaveLength(0);
  });

  it('reaches an allow-listed address, and an allow-listed host name', async () => {
    expect(await open.run(target(receiver.url()), request, never)).toMatchObject({ ok: true });
    const byName = new WebhookRunner({
      guard: new DestinationGuard(parseAllowList(['localhost'])),
      signer: new WebhookSigner({}),
      connectionsPerOrigin: 2,
    });
    try {
      receiver.script = () => ({ status: 200 });
      // localhost may resolve to ::1 first, where the receiver does not listen: accept either
      // a delivery or a connection error, but never a refusal.
      const out = await byName.run(target(receiver.url('/hook', 'localhost')), request, never);
      expect(out.refused).toBeUndefined();
    } finally {
      await byName.close();
    }
    expect(receiver.calls.length).toBeGreaterThanOrEqual(1);
  });

  it('reports a connection failure as retryable', async () => {
    const out = await open.run(target('http://127.0.0.1:1/hook'), request, never);
    expect(out).toMatchObject({ ok: false, retryable: true });
    expect(out.error).toMatch(/^NETWORK: ECONNREFUSED/);
  });
});
