/**
 * Helpers for the executor's integration and e2e tests: a scripted webhook receiver (answers
 * per call, can hold a request open, redirect, ask for Retry-After), fire builders, a publisher of
 * fire events straight onto the fires topic (as a scheduler would), and readers of the result,
 * retry and dead-letter topics.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { FireEvent, FireResult, JobPolicies, RetryPolicy, Target } from '@tickwork/domain';
import { DEFAULT_POLICIES, policiesToWire, targetToWire } from '@tickwork/domain';
import { EventCodecs, type InboundMessage, type MessageProducer } from '@tickwork/messaging';
import type { Pool } from '@tickwork/store';
import { STACK } from '../support/env';
import { testKafkaBus, TopicTap } from '../support/kafka';

export interface Call {
  readonly n: number;
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly at: number;
}

/** How to answer one call: a status (with headers, after a delay), or hold it open until released. */
export type Reply = { status: number; headers?: Record<string, string>; delayMs?: number } | 'hold';

export class ScriptedReceiver {
  readonly calls: Call[] = [];
  private server: Server | undefined;
  private readonly held: { call: Call; res: ServerResponse }[] = [];
  script: (call: Call) => Reply = () => ({ status: 200 });
  port = 0;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const call: Call = {
          n: this.calls.length,
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        };
        this.calls.push(call);
        const reply = this.script(call);
        if (reply === 'hold') {
          this.held.push({ call, res });
          return;
        }
        const send = () => {
          if (res.destroyed) return;
          res.writeHead(reply.status, reply.headers ?? {});
          res.end('ok');
        };
        if (reply.delayMs) setTimeout(send, reply.delayMs);
        else send();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
    return this;
  }

  url(path = '/hook', host = '127.0.0.1'): string {
    return `http://${host}:${this.port}${path}`;
  }

  /** Answers every held request with `status`. */
  release(status = 200): void {
    for (const { res } of this.held.splice(0)) if (!res.destroyed) res.writeHead(status).end('late');
  }

  heldCount(): number {
    return this.held.length;
  }

  async stop(): Promise<void> {
    this.release(503);
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** A retry policy quick enough for tests. */
export function quickRetry(p: Partial<RetryPolicy> = {}): JobPolicies {
  return {
    ...DEFAULT_POLICIES,
    retry: {
      maxAttempts: 3,
      initialBackoffMs: 300,
      multiplier: 4,
      maxBackoffMs: 10_000,
      maxEventAgeMs: 600_000,
      ...p,
    },
  };
}

/** Inserts a job row (the executor reads its retry policy and checks it still exists). */
export async function insertJob(
  pool: Pool,
  jobId: string,
  target: Target,
  policies: JobPolicies = quickRetry(),
  tenantId = 'acme',
): Promise<void> {
  await pool.query(
    `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, target, payload, policies)
     VALUES ($1, $2, 0, 'once', $3::jsonb, 'COMPLETED', $4::jsonb, '{"n":1}'::jsonb, $5::jsonb)`,
    [
      jobId,
      tenantId,
      JSON.stringify({ kind: 'once', at: new Date().toISOString() }),
      JSON.stringify(targetToWire(target)),
      JSON.stringify(policiesToWire(policies)),
    ],
  );
}

/** A fire of (jobId, fenceToken) due now, as a scheduler would publish it. */
export function fireOf(
  jobId: string,
  target: Target,
  opts: { fenceToken?: number; tenantId?: string; scheduledFor?: Date; payload?: FireEvent['payload'] } = {},
): FireEvent {
  const fenceToken = opts.fenceToken ?? 1;
  const at = opts.scheduledFor ?? new Date();
  return {
    jobId,
    tenantId: opts.tenantId ?? 'acme',
    fenceToken,
    fireId: `${jobId}:${fenceToken}`,
    scheduledFor: at,
    nominalTime: at,
    attempt: 1,
    target,
    payload: opts.payload === undefined ? { hello: jobId } : opts.payload,
  };
}

export function webhook(url: string, extra: Partial<Extract<Target, { type: 'webhook' }>> = {}): Target {
  return {
    type: 'webhook',
    url,
    method: 'POST',
    headers: {},
    timeoutMs: 5_000,
    successStatus: { min: 200, max: 299 },
    ...extra,
  };
}

/** Publishes fire events (Avro, through the registry) onto a deployment's fires topic. */
export class FirePublisher {
  private constructor(
    private readonly producer: MessageProducer,
    readonly codecs: EventCodecs,
    private readonly topics: Topics,
  ) {}

  static async open(prefix: string): Promise<FirePublisher> {
    const topics = topicsOf(prefix);
    const bus = testKafkaBus('tickwork-test');
    const producer = await bus.producer({ idempotent: true });
    const codecs = await EventCodecs.connect(STACK.registryUrl, {
      fireTopics: [topics.fires, topics.dlq, ...topics.retry],
      resultTopics: [topics.results],
    });
    return new FirePublisher(producer, codecs, topics);
  }

  async publish(...fires: FireEvent[]): Promise<void> {
    await this.publishWith({}, ...fires);
  }

  /** Publishes fires with extra headers (a scheduler's `traceparent`, say). */
  async publishWith(headers: Readonly<Record<string, string>>, ...fires: FireEvent[]): Promise<void> {
    const messages = await Promise.all(
      fires.map(async (f) => ({
        key: f.jobId,
        value: await this.codecs.encodeFire(this.topics.fires, f),
        headers: { ...headers, 'tickwork-fire-id': f.fireId },
      })),
    );
    await this.producer.send([{ topic: this.topics.fires, messages }]);
  }

  /** Sends raw bytes to the fires topic (bad input). */
  async publishRaw(key: string, value: Buffer): Promise<void> {
    await this.producer.send([{ topic: this.topics.fires, messages: [{ key, value }] }]);
  }

  async close(): Promise<void> {
    await this.producer.disconnect();
  }
}

export interface Topics {
  readonly fires: string;
  readonly results: string;
  readonly dlq: string;
  readonly retry: string[];
}

/** The topics of a deployment with the test retry tiers (TICKWORK_RETRY_TIERS=1s,4s). */
export function topicsOf(prefix: string, tiers = ['1s', '4s']): Topics {
  return {
    fires: `${prefix}.fires`,
    results: `${prefix}.fire-results`,
    dlq: `${prefix}.fires.dlq`,
    retry: tiers.map((t) => `${prefix}.fires.retry.${t}`),
  };
}

/** Decoded readers of the results, dead-letter and retry topics. */
export class Outputs {
  private constructor(
    private readonly codecs: EventCodecs,
    readonly results: TopicTap,
    readonly dlq: TopicTap,
    readonly retries: TopicTap[],
  ) {}

  static async open(codecs: EventCodecs, topics: Topics): Promise<Outputs> {
    return new Outputs(
      codecs,
      await TopicTap.open(topics.results),
      await TopicTap.open(topics.dlq),
      await Promise.all(topics.retry.map((t) => TopicTap.open(t))),
    );
  }

  async resultsFor(jobId: string): Promise<FireResult[]> {
    const all = await Promise.all(this.results.messages.map((m) => this.codecs.decodeResult(m.value)));
    return all.filter((r) => r.jobId === jobId);
  }

  dlqFor(jobId: string): InboundMessage[] {
    return this.dlq.messages.filter((m) => m.key?.toString() === jobId);
  }

  retriesFor(jobId: string): InboundMessage[] {
    return this.retries.flatMap((t) => t.messages).filter((m) => m.key?.toString() === jobId);
  }

  async close(): Promise<void> {
    await Promise.all([this.results.close(), this.dlq.close(), ...this.retries.map((t) => t.close())]);
  }
}

/** Environment for an executor app under test: short leases, fast session timeout, quick tiers. */
export function executorEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    TICKWORK_RETRY_TIERS: '1s,4s',
    TICKWORK_RUN_LEASE_MS: '3000',
    TICKWORK_RUN_HEARTBEAT_MS: '500',
    TICKWORK_EXECUTOR_SESSION_TIMEOUT_MS: '6000',
    TICKWORK_EXECUTOR_DRAIN_MS: '2000',
    TICKWORK_WEBHOOK_ALLOW: '127.0.0.1',
    ...extra,
  };
}
