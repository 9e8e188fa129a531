/**
 * Calls HTTP webhooks with undici: pooled keep-alive connections through the guarded connector,
 * Standard Webhooks signatures, and a hard cut at the target's timeout. Redirects are never
 * followed (undici's request() follows none unless a redirect interceptor is added, and none is):
 * a 3xx is an outcome like any other status, so a redirect cannot lead to an unchecked address.
 */
import { Agent, errors as undiciErrors, request } from 'undici';
import type { WebhookTarget } from '@tickwork/domain';
import { ABORTED_CALL, type AttemptOutcome, type TargetRequest, type TargetRunner } from './attempt';
import { DestinationRefusedError, type DestinationGuard } from './destination-guard';
import { guardedConnector, type Resolver } from './webhook-connector';
import type { WebhookSigner } from './webhook-signer';

export interface WebhookRunnerOptions {
  readonly guard: DestinationGuard;
  readonly signer: WebhookSigner;
  /** Connections kept per origin; the executor's concurrency is a sensible value. */
  readonly connectionsPerOrigin: number;
  /** For tests of the lookup hook: resolve host names with this instead of the system resolver. */
  readonly resolve?: Resolver;
  readonly now?: () => Date;
}

// Headers the transport owns, or that would let a job smuggle framing; a job's own are dropped.
const FORBIDDEN_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'expect',
  'te',
  'trailer',
  'proxy-authorization',
  'proxy-connection',
]);
const RESPONSE_DRAIN_LIMIT = 64 * 1024;

export class WebhookRunner implements TargetRunner<WebhookTarget> {
  private readonly agent: Agent;
  private readonly now: () => Date;

  constructor(private readonly opts: WebhookRunnerOptions) {
    this.now = opts.now ?? (() => new Date());
    this.agent = new Agent({
      connections: opts.connectionsPerOrigin,
      // Below the usual 5 s server keep-alive, so we rarely write to a socket the server is closing.
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 60_000,
      connect: guardedConnector(opts.guard, {
        connectTimeoutMs: 10_000,
        ...(opts.resolve ? { resolve: opts.resolve } : {}),
      }),
    });
  }

  /** Calls the webhook once; every failure comes back as an outcome, never as an exception. */
  async run(target: WebhookTarget, req: TargetRequest, signal: AbortSignal): Promise<AttemptOutcome> {
    let url: URL;
    try {
      url = new URL(target.url);
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        throw new Error(`unsupported scheme ${url.protocol}`);
    } catch (e) {
      return {
        ok: false,
        httpStatus: null,
        error: `INVALID_TARGET: ${(e as Error).message}`,
        retryable: false,
      };
    }
    const hasBody = target.method !== 'GET' && target.method !== 'DELETE';
    const body = hasBody ? (req.body ?? 'null') : '';
    const timestamp = Math.floor(this.now().getTime() / 1000);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(target.headers)) {
      const name = k.toLowerCase();
      if (!FORBIDDEN_HEADERS.has(name) && !name.startsWith('webhook-') && !name.startsWith('tickwork-'))
        headers[name] = v;
    }
    Object.assign(headers, {
      ...req.traceHeaders,
      'content-type': 'application/json',
      'user-agent': 'tickwork-executor',
      'tickwork-job-id': req.jobId,
      'tickwork-fence-token': String(req.fenceToken),
      'tickwork-scheduled-for': req.scheduledFor.toISOString(),
      'tickwork-attempt': String(req.attempt),
      'webhook-id': req.fireId,
      'webhook-timestamp': String(timestamp),
    });
    const signature = this.opts.signer.sign(req.tenantId, req.fireId, timestamp, body);
    if (signature) headers['webhook-signature'] = signature;

    // A plain timer, cleared when the call ends: AbortSignal.timeout would keep a timer and a
    // signal alive for the full timeout after every call, thousands of them at full speed.
    const call = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      call.abort();
    }, target.timeoutMs);
    const onAbort = () => call.abort();
    if (signal.aborted) call.abort();
    else signal.addEventListener('abort', onAbort, { once: true });
    const combined = call.signal;
    try {
      const res = await request(url, {
        dispatcher: this.agent,
        method: target.method,
        headers,
        body: hasBody ? body : null,
        signal: combined,
        headersTimeout: target.timeoutMs,
        bodyTimeout: target.timeoutMs,
      });
      // Drain (bounded, and cut by the same deadline) so the connection goes back to the pool;
      // the status already decided the outcome, so a slow body does not change it.
      await res.body.dump({ limit: RESPONSE_DRAIN_LIMIT, signal: combined }).catch(() => undefined);
      return classifyStatus(res.statusCode, target, res.headers, this.now());
    } catch (e) {
      if (signal.aborted) return ABORTED_CALL;
      if (timedOut)
        return {
          ok: false,
          httpStatus: null,
          error: `TIMEOUT: no complete answer within ${target.timeoutMs} ms`,
          retryable: true,
        };
      const refused = findRefusal(e);
      if (refused)
        return {
          ok: false,
          httpStatus: null,
          error: refused.message,
          retryable: false,
          refused: true,
        };
      if (e instanceof undiciErrors.InvalidArgumentError)
        return { ok: false, httpStatus: null, error: `INVALID_TARGET: ${e.message}`, retryable: false };
      const err = e as NodeJS.ErrnoException;
      return {
        ok: false,
        httpStatus: null,
        error: `NETWORK: ${err.code ? `${err.code} ` : ''}${err.message}`,
        retryable: true,
      };
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** Closes pooled connections. */
  async close(): Promise<void> {
    await this.agent.close();
  }
}

function classifyStatus(
  status: number,
  target: WebhookTarget,
  headers: Record<string, string | string[] | undefined>,
  now: Date,
): AttemptOutcome {
  if (status >= target.successStatus.min && status <= target.successStatus.max)
    return { ok: true, httpStatus: status, error: null, retryable: false };
  if (status >= 300 && status < 400) {
    const location = headers.location;
    return {
      ok: false,
      httpStatus: status,
      error: `HTTP ${status}: redirects are not followed${location ? ` (location: ${String(location).slice(0, 200)})` : ''}`,
      retryable: false,
    };
  }
  const retryable = status >= 500 || status === 408 || status === 429;
  const retryAfterMs =
    status === 429 || status === 503 ? parseRetryAfter(headers['retry-after'], now) : undefined;
  return {
    ok: false,
    httpStatus: status,
    error: `HTTP ${status}`,
    retryable,
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
}

/** Retry-After as delta-seconds or an HTTP date, in ms from `now`; undefined when absent or malformed. */
export function parseRetryAfter(raw: string | string[] | undefined, now: Date): number | undefined {
  const v = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}

function findRefusal(e: unknown): DestinationRefusedError | undefined {
  for (let cur: unknown = e, depth = 0; cur && depth < 5; cur = (cur as { cause?: unknown }).cause, depth++) {
    if (cur instanceof DestinationRefusedError) return cur;
  }
  return undefined;
}
