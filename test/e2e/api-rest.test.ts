/**
 * REST under /v1 against a real API: the same operations, errors and tenancy as gRPC, and the served
 * OpenAPI document matching the routes. Every response is validated against that document (Ajv).
 */
import { createHash } from 'node:crypto';
import { Client as Pg } from 'pg';
import { startApp, type AppProcess } from '../support/apps';
import { freePort, isolate, type Isolation } from '../support/env';
import { OpenApiContract } from '../support/openapi';

const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const A = 'tok-rest-acme-0123456789abcdef';
const B = 'tok-rest-globex-0123456789abcdef';
const TENANTS = JSON.stringify({
  tenants: { acme: { max_jobs: 2 } },
  tokens: [
    { name: 'acme-rest', sha256: sha(A), role: 'tenant', tenant: 'acme' },
    { name: 'globex-rest', sha256: sha(B), role: 'tenant', tenant: 'globex' },
  ],
});

type Json = Record<string, unknown>;

describe('REST API /v1', () => {
  let iso: Isolation;
  let api: AppProcess;
  let db: Pg;
  let contract: OpenApiContract;
  let apiFetch: typeof fetch;

  const http = async (
    method: string,
    path: string,
    opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
  ) => {
    const res = await apiFetch(path, {
      method,
      headers: {
        ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
        ...opts.headers,
      },
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : null) as Json };
  };
  const job = (id: string) => ({
    job_id: id,
    schedule: { kind: 'interval', every_ms: 3_600_000 },
    target: { type: 'webhook', url: 'https://example.com/h' },
  });

  beforeAll(async () => {
    iso = isolate('apirest');
    api = startApp(
      'api',
      iso.env({ TICKWORK_TENANTS: TENANTS, TICKWORK_GRPC_PORT: String(await freePort()) }),
      await freePort(),
    );
    await api.ready();
    contract = await OpenApiContract.served(api.url);
    apiFetch = contract.fetch(api.url);
    db = new Pg({ connectionString: iso.databaseUrl });
    await db.connect();
  }, 120_000);

  afterAll(async () => {
    await api?.stop();
    await db?.end();
    await iso?.dispose();
  });

  it('serves every operation with the shared error shape and status codes', async () => {
    const unauth = await http('GET', '/v1/jobs');
    expect(unauth.status).toBe(401);
    expect(unauth.headers.get('www-authenticate')).toMatch(/^Bearer/);

    const created = await http('POST', '/v1/jobs', { token: A, body: job('rest-1') });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      job_id: 'rest-1',
      tenant_id: 'acme',
      status: 'SCHEDULED',
      etag: 'v1',
    });

    const bad = await http('POST', '/v1/jobs', {
      token: A,
      body: {
        ...job('rest-x'),
        schedule: { kind: 'cron', expression: '* * *', time_zone: 'Nowhere' },
        extra: 1,
      },
    });
    expect(bad.status).toBe(400);
    expect((bad.body.violations as { field: string }[]).map((v) => v.field).sort()).toEqual([
      'extra',
      'schedule.expression',
      'schedule.time_zone',
    ]);
    expect(
      (await http('POST', '/v1/jobs', { token: A, body: { ...job('rest-2'), tenant_id: 'globex' } })).status,
    ).toBe(403);
    expect((await http('POST', '/v1/jobs', { token: A, body: job('rest-1') })).status).toBe(409);
    expect((await http('POST', '/v1/jobs', { token: A, body: job('rest-2') })).status).toBe(201);
    const quota = await http('POST', '/v1/jobs', { token: A, body: job('rest-3') });
    expect(quota).toMatchObject({ status: 429, body: { error: 'RESOURCE_EXHAUSTED' } });

    const got = await http('GET', '/v1/jobs/rest-1', { token: A });
    expect(got.status).toBe(200);
    expect(got.headers.get('etag')).toBe('"v1"');
    expect(got.body.last_run).toBeNull();
    expect((await http('GET', '/v1/jobs/rest-1', { token: B })).status).toBe(404);
    expect(((await http('GET', '/v1/jobs', { token: B })).body.jobs as Json[]).length).toBe(0);
    expect(
      ((await http('GET', '/v1/jobs?page_size=1', { token: A })).body.next_page_token as string).length,
    ).toBeGreaterThan(0);

    const stale = await http('PATCH', '/v1/jobs/rest-1', {
      token: A,
      body: { labels: { a: 'b' } },
      headers: { 'if-match': '"v7"' },
    });
    expect(stale.status).toBe(412);
    const patched = await http('PATCH', '/v1/jobs/rest-1', {
      token: A,
      body: { labels: { a: 'b' } },
      headers: { 'if-match': '"v1"' },
    });
    expect(patched).toMatchObject({ status: 200, body: { labels: { a: 'b' }, etag: 'v2' } });
    expect((await http('PATCH', '/v1/jobs/rest-1', { token: A, body: { tenant_id: 'x' } })).status).toBe(400);
    expect((await http('PATCH', '/v1/jobs/rest-1', { token: B, body: { labels: {} } })).status).toBe(404);

    expect((await http('POST', '/v1/jobs/rest-1/pause', { token: A })).body.status).toBe('PAUSED');
    expect((await http('POST', '/v1/jobs/rest-1/resume', { token: A })).body.status).toBe('SCHEDULED');
    expect((await http('POST', '/v1/jobs/rest-1/pause', { token: B })).status).toBe(404);
    const fire = await http('POST', '/v1/jobs/rest-1/trigger', { token: A });
    expect(fire).toMatchObject({ status: 202, body: { fire_id: 'rest-1:1', fence_token: 1 } });
    expect((await http('POST', '/v1/jobs/rest-1/trigger', { token: B })).status).toBe(404);

    expect((await http('GET', '/v1/jobs/rest-1/runs', { token: A })).body).toEqual({
      runs: [],
      next_page_token: '',
    });
    expect((await http('GET', '/v1/jobs/rest-1/runs/1', { token: A })).status).toBe(404);
    const occ = await http('GET', '/v1/jobs/rest-1/occurrences', { token: A });
    expect((occ.body.occurrences as Json[]).map((o) => [o.outcome, o.trigger])).toEqual([
      ['FIRED', 'MANUAL'],
    ]);
    expect((await http('GET', '/v1/jobs/rest-1/occurrences', { token: B })).status).toBe(404);
    expect((await http('GET', '/v1/dead-letters', { token: A })).body).toEqual({
      dead_letters: [],
      next_page_token: '',
    });
    expect((await http('GET', '/v1/dead-letters?tenant_id=acme', { token: B })).status).toBe(403);
    expect(
      (await http('POST', `/v1/dead-letters/${encodeURIComponent('rest-1:1')}/replay`, { token: A })).status,
    ).toBe(404);

    const preview = await http('POST', '/v1/schedules/preview', {
      token: A,
      body: {
        schedule: { kind: 'cron', expression: '0 9 * * *', time_zone: 'America/New_York' },
        count: 2,
        from: '2026-11-01T00:00:00Z',
      },
    });
    expect(preview.body.fires).toEqual([
      {
        at: '2026-11-01T14:00:00.000Z',
        local_time: '2026-11-01T09:00:00-05:00',
        time_zone: 'America/New_York',
      },
      {
        at: '2026-11-02T14:00:00.000Z',
        local_time: '2026-11-02T09:00:00-05:00',
        time_zone: 'America/New_York',
      },
    ]);

    expect((await http('DELETE', '/v1/jobs/rest-1', { token: B })).status).toBe(404);
    expect(
      (await http('DELETE', '/v1/jobs/rest-1', { token: A, headers: { 'if-match': '"v1"' } })).status,
    ).toBe(412);
    expect((await http('DELETE', '/v1/jobs/rest-1', { token: A })).status).toBe(204);
    expect((await http('GET', '/v1/jobs/rest-1', { token: A })).status).toBe(404);

    const audit = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM audit_events WHERE via = 'rest' AND job_id = 'rest-1'`,
    );
    expect(audit.rows[0]!.n).toBeGreaterThanOrEqual(10);
  });

  it('refuses an instant outside 1970..9999 (the year-0 poison of issue 24) on create, PATCH and preview, naming the field', async () => {
    const range = /^must be within 1970-01-01T00:00:00Z to 9999-12-31T23:59:59\.999Z; got /;
    const year0 = await http('POST', '/v1/jobs', {
      token: B,
      body: { ...job('rest-year0'), schedule: { kind: 'once', at: '0000-01-01T00:00:00Z' } },
    });
    expect(year0.status).toBe(400);
    expect(year0.body.violations).toEqual([{ field: 'schedule.at', message: expect.stringMatching(range) }]);
    expect((await http('GET', '/v1/jobs/rest-year0', { token: B })).status).toBe(404);
    const bounds = await http('POST', '/v1/jobs', {
      token: B,
      body: {
        ...job('rest-bounds'),
        schedule: {
          kind: 'interval',
          every_ms: 60_000,
          start_at: '1969-07-20T20:17:40Z',
          end_at: '+010000-01-01T00:00:00Z',
        },
      },
    });
    expect((bounds.body.violations as { field: string }[]).map((v) => v.field)).toEqual([
      'schedule.start_at',
      'schedule.end_at',
    ]);
    const policy = await http('POST', '/v1/jobs', {
      token: B,
      body: {
        ...job('rest-policy'),
        policies: { retry: { max_backoff_ms: 9e15 }, catch_up_window_ms: 9e15 },
      },
    });
    expect((policy.body.violations as { field: string }[]).map((v) => v.field).sort()).toEqual([
      'policies.catch_up_window_ms',
      'policies.retry.max_backoff_ms',
    ]);

    expect((await http('POST', '/v1/jobs', { token: B, body: job('rest-later') })).status).toBe(201);
    const patched = await http('PATCH', '/v1/jobs/rest-later', {
      token: B,
      body: { schedule: { kind: 'once', at: '0000-01-01T00:00:00Z' } },
    });
    expect(patched.status).toBe(400);
    expect((patched.body.violations as { field: string }[]).map((v) => v.field)).toEqual(['schedule.at']);

    const preview = await http('POST', '/v1/schedules/preview', {
      token: B,
      body: { schedule: { kind: 'interval', every_ms: 60_000 }, from: '0000-01-01T00:00:00Z' },
    });
    expect(preview.status).toBe(400);
    expect(preview.body.violations).toEqual([{ field: 'from', message: expect.stringMatching(range) }]);
  });

  it("binds a page token to its listing's filters: another label, status or job is 400 naming page_token", async () => {
    for (const id of ['pt-1', 'pt-2', 'pt-3'])
      expect(
        (await http('POST', '/v1/jobs', { token: B, body: { ...job(id), labels: { suite: 'X' } } })).status,
      ).toBe(201);
    const first = await http('GET', '/v1/jobs?label=suite%3DX&page_size=1', { token: B });
    expect((first.body.jobs as Json[]).map((j) => j.job_id)).toEqual(['pt-1']);
    const token = encodeURIComponent(first.body.next_page_token as string);
    const refused = (body: Json) => {
      expect(body).toMatchObject({ error: 'INVALID_ARGUMENT' });
      expect(body.violations).toEqual([
        { field: 'page_token', message: expect.stringMatching(/^was issued for other filters/) },
      ]);
    };
    for (const other of ['label=suite%3Dother', 'label=suite%3DX&status=PAUSED', '']) {
      const r = await http('GET', `/v1/jobs?${other}&page_size=1&page_token=${token}`, { token: B });
      expect(r.status).toBe(400);
      refused(r.body);
    }
    const next = await http('GET', `/v1/jobs?label=suite%3DX&page_size=1&page_token=${token}`, { token: B });
    expect(next.status).toBe(200);
    expect((next.body.jobs as Json[]).map((j) => j.job_id)).toEqual(['pt-2']);

    // Per-job listings: a token of pt-1's occurrences is not one of pt-2's.
    for (let i = 0; i < 2; i++)
      expect((await http('POST', '/v1/jobs/pt-1/trigger', { token: B })).status).toBe(202);
    const occ = await http('GET', '/v1/jobs/pt-1/occurrences?page_size=1', { token: B });
    const occToken = encodeURIComponent(occ.body.next_page_token as string);
    expect(occToken.length).toBeGreaterThan(0);
    const otherJob = await http('GET', `/v1/jobs/pt-2/occurrences?page_size=1&page_token=${occToken}`, {
      token: B,
    });
    expect(otherJob.status).toBe(400);
    expect(otherJob.body.violations).toEqual([{ field: 'page_token', message: expect.any(String) }]);
    expect(
      (await http('GET', `/v1/jobs/pt-1/occurrences?page_size=1&page_token=${occToken}`, { token: B }))
        .status,
    ).toBe(200);

    // Dead letters (the executor's ledger rows for the two fires, as it writes them): a token of
    // job_id=pt-1 is refused for another job or none. Runs, a run and dead letters with content
    // go through the document check too.
    await db.query(
      `INSERT INTO job_runs (job_id, fence_token, tenant_id, fire_id, nominal_time, scheduled_for, attempt, status, started_at, finished_at, http_status, error)
       SELECT 'pt-1', f.fence_token, 'globex', 'pt-1:' || f.fence_token, f.nominal_time, f.scheduled_for, 5, 'DEAD_LETTERED', now(), now(), 500, 'HTTP 500'
         FROM fires f WHERE f.job_id = 'pt-1'`,
    );
    expect(((await http('GET', '/v1/jobs/pt-1/runs', { token: B })).body.runs as Json[]).length).toBe(2);
    expect((await http('GET', '/v1/jobs/pt-1/runs/1', { token: B })).body).toMatchObject({
      fire_id: 'pt-1:1',
      status: 'DEAD_LETTERED',
    });
    const dl = await http('GET', '/v1/dead-letters?job_id=pt-1&page_size=1', { token: B });
    expect((dl.body.dead_letters as Json[]).map((d) => d.job_id)).toEqual(['pt-1']);
    const dlToken = encodeURIComponent(dl.body.next_page_token as string);
    expect(dlToken.length).toBeGreaterThan(0);
    for (const other of ['job_id=pt-2&', '']) {
      const r = await http('GET', `/v1/dead-letters?${other}page_size=1&page_token=${dlToken}`, { token: B });
      expect(r.status).toBe(400);
      refused(r.body);
    }
    const dlNext = await http('GET', `/v1/dead-letters?job_id=pt-1&page_size=1&page_token=${dlToken}`, {
      token: B,
    });
    expect((dlNext.body.dead_letters as Json[]).length).toBe(1);
  });

  it('the contract check is not vacuous: it refuses what the served document does not say', async () => {
    expect((await http('POST', '/v1/jobs', { token: B, body: job('contract-1') })).status).toBe(201);
    const res = await fetch(`${api.url}/v1/jobs/contract-1`, { headers: { authorization: `Bearer ${B}` } });
    const real = {
      method: 'GET',
      url: '/v1/jobs/contract-1',
      status: res.status,
      contentType: res.headers.get('content-type'),
      body: await res.text(),
    };
    expect(contract.problems(real)).toEqual([]);
    const jobBody = JSON.parse(real.body) as Json;
    const variants: [string, Partial<typeof real>, RegExp][] = [
      ['an undocumented field', { body: JSON.stringify({ ...jobBody, secret: 1 }) }, /unevaluated/],
      [
        'a null where none is allowed',
        { body: JSON.stringify({ ...jobBody, etag: null }) },
        /must be string/,
      ],
      ['a missing field', { body: JSON.stringify({ ...jobBody, etag: undefined }) }, /required/],
      ['an undocumented status', { status: 418 }, /status not documented/],
      ['an undocumented content type', { contentType: 'text/html' }, /content type text\/html/],
      ['an undocumented operation', { method: 'PUT' }, /not an operation/],
    ];
    for (const [what, change, problem] of variants) {
      const problems = contract.problems({ ...real, ...change });
      expect({ what, problems: problems.join('\n') }).toEqual({
        what,
        problems: expect.stringMatching(problem),
      });
    }
  });

  it('serves the committed OpenAPI document, which lists exactly the routes the app has', async () => {
    const doc = await http('GET', '/v1/openapi.json');
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.1.0');
    const yaml = await apiFetch('/v1/openapi.yaml');
    expect(yaml.headers.get('content-type')).toMatch(/yaml/);

    const documented = new Set<string>();
    for (const [path, ops] of Object.entries(doc.body.paths as Record<string, Json>)) {
      for (const method of Object.keys(ops).filter((k) =>
        ['get', 'post', 'put', 'patch', 'delete'].includes(k),
      )) {
        documented.add(`${method.toUpperCase()} ${path.replace(/\{([a-z_]+)\}/g, ':$1')}`);
      }
    }
    // The routes Nest mapped, as it logs them at start-up ("Mapped {/v1/jobs/:jobId, GET} route").
    const mapped = new Set(
      api.output
        .map((l) => /Mapped \{([^,]+), (\w+)\} route/.exec(l))
        .filter((m): m is RegExpExecArray => m !== null)
        .map(
          (m) =>
            `${m[2]} ${m[1]!.replace(/:([A-Za-z]+)/g, (_s, p: string) => `:${p.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`)}`,
        ),
    );
    expect(mapped.size).toBeGreaterThan(10);
    expect([...mapped].sort()).toEqual([...documented].sort());
  });
});
