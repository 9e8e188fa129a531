/** Calls HTTP webhooks with undici (pooled connections), cut at the target's timeout. */
import { Agent, request } from 'undici';
import type { WebhookTarget } from '@tickwork/domain';
import type { AttemptOutcome, TargetRequest, TargetRunner } from './attempt';

export class WebhookRunner implements TargetRunner<WebhookTarget> {
  // undici's request() follows no redirects, so a redirect can never reach an unchecked address.
  private readonly agent = new Agent({ keepAliveTimeout: 10_000, connections: 256 });

  async run(target: WebhookTarget, req: TargetRequest, signal: AbortSignal): Promise<AttemptOutcome> {
    const timeout = AbortSignal.timeout(target.timeoutMs);
    const combined = AbortSignal.any([signal, timeout]);
    try {
      const res = await request(target.url, {
        dispatcher: this.agent,
        method: target.method,
        headers: {
          ...target.headers,
          'content-type': 'application/json',
          'user-agent': 'tickwork-executor',
          'tickwork-job-id': req.jobId,
          'tickwork-fence-token': String(req.fenceToken),
          'tickwork-scheduled-for': req.scheduledFor.toISOString(),
          'tickwork-attempt': String(req.attempt),
          'webhook-id': req.fireId,
        },
        body: target.method === 'GET' || target.method === 'DELETE' ? undefined : (req.body ?? 'null'),
        signal: combined,
        headersTimeout: target.timeoutMs,
        bodyTimeout: target.timeoutMs,
      });
      // Drain (bounded) so the connection returns to the pool.
      await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      const status = res.statusCode;
      const ok = status >= target.successStatus.min && status <= target.successStatus.max;
      if (ok) return { ok, httpStatus: status, error: null, retryable: false };
      const retryAfterMs = parseRetryAfter(res.headers['retry-after']);
      return {
        ok: false,
        httpStatus: status,
        error: `HTTP ${status}`,
        retryable: status >= 500 || status === 408 || status === 429,
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      };
    } catch (e) {
      const err = e as Error;
      if (timeout.aborted) return { ok: false, httpStatus: null, error: `timed out after ${target.timeoutMs} ms`, retryable: true };
      if (signal.aborted) return { ok: false, httpStatus: null, error: 'aborted: run lease lost or executor stopping', retryable: true };
      return { ok: false, httpStatus: null, error: `${err.name}: ${err.message}`, retryable: true };
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

function parseRetryAfter(raw: string | string[] | undefined): number | undefined {
  const v = Array.isArray(raw) ? raw[0] : raw;
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
