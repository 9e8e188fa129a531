import { Writable } from 'node:stream';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { createLogger, fireLogFields, PinoNestLogger } from './logger';

function capture(level: 'info' | 'debug' = 'info') {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n').filter(Boolean))
        lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  const logger = createLogger({
    service: 'tickwork-test',
    instanceId: 'i-1',
    level,
    format: 'json',
    destination,
  });
  return { logger, lines };
}

describe('structured logs', () => {
  it('writes one JSON object per line with level, time, service, instance and the Nest context', () => {
    const { logger, lines } = capture();
    new PinoNestLogger(logger).log('hello', 'scheduler');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'info',
      service: 'tickwork-test',
      instance: 'i-1',
      context: 'scheduler',
      msg: 'hello',
    });
    expect(new Date(lines[0]!.time as string).toISOString()).toBe(lines[0]!.time);
  });

  it('merges object messages, keeps error stacks, and drops lines below the level', () => {
    const { logger, lines } = capture();
    const nest = new PinoNestLogger(logger);
    nest.warn({ msg: 'claimed', job_id: 'j', fence_token: 3 }, 'fires');
    nest.error('boom', 'Error: boom\n    at x (y.js:1:1)', 'api');
    nest.debug('quiet', 'api');
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'warn',
        msg: 'claimed',
        job_id: 'j',
        fence_token: 3,
        context: 'fires',
      }),
      expect.objectContaining({
        level: 'error',
        msg: 'boom',
        context: 'api',
        stack: expect.stringContaining('at x'),
      }),
    ]);
  });

  it('redacts payloads, headers and credentials wherever a call passes them', () => {
    const { logger, lines } = capture();
    logger.info(
      { payload: { card: '4111' }, target: { headers: { authorization: 'Bearer s3cret' } }, password: 'p' },
      'x',
    );
    const text = JSON.stringify(lines[0]);
    expect(text).not.toContain('4111');
    expect(text).not.toContain('s3cret');
    expect(lines[0]).toMatchObject({
      payload: '[redacted]',
      password: '[redacted]',
      target: { headers: '[redacted]' },
    });
  });

  it('gives fire lines the occurrence and its trace', () => {
    const fields = fireLogFields({ jobId: 'j', tenantId: 'acme', fenceToken: 2, attempt: 1 });
    expect(fields).toEqual({ job_id: 'j', fence_token: 2, tenant: 'acme', attempt: 1 });
  });

  it('adds trace_id and span_id to lines written inside a span', () => {
    const { logger, lines } = capture();
    const sc = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 };
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    context.with(trace.setSpanContext(context.active(), sc), () => logger.info('inside'));
    logger.info('outside');
    expect(lines[0]).toMatchObject({ trace_id: sc.traceId, span_id: sc.spanId });
    expect(lines[1]).not.toHaveProperty('trace_id');
    context.disable();
  });
});
