/**
 * A client we did not write, used as a user would: openapi-fetch typed by the types openapi-typescript
 * generated from the OpenAPI document (./generated, made by generate.mjs). Type-checked with tsc by
 * the e2e test (and by npm run lint), then run against a real API. Only the document's names and
 * shapes are used here: nothing of Tickwork's own code.
 */
import createClient from 'openapi-fetch';
import type { components, paths } from './generated/tickwork-api';

export type Job = components['schemas']['Job'];
export type ApiError = components['schemas']['Error'];

/** A typed client for the API at `baseUrl`, authenticating with `token`. */
export function tickworkClient(baseUrl: string, token: string, fetchImpl: typeof fetch = fetch) {
  return createClient<paths>({
    baseUrl,
    headers: { authorization: `Bearer ${token}` },
    fetch: fetchImpl,
  });
}

/** What the scenario saw, for the test to assert. */
export interface ScenarioResult {
  created: Job[];
  got: { job: Job; etag: string | null };
  /** Job ids page by page, listing label suite=<suite> two at a time. */
  pages: string[][];
  patched: Job;
  paused: Job;
  deletedStatus: number;
  afterDelete: { status: number; error: ApiError | undefined };
  invalid: { status: number; error: ApiError | undefined };
  stale: { status: number; error: ApiError | undefined };
}

/** Creates, reads, lists (paged), patches, pauses and deletes jobs through the generated client. */
export async function runScenario(
  client: ReturnType<typeof tickworkClient>,
  suite: string,
): Promise<ScenarioResult> {
  const created: Job[] = [];
  for (const n of [1, 2, 3]) {
    const { data, error } = await client.POST('/v1/jobs', {
      body: {
        job_id: `${suite}-${n}`,
        schedule: { kind: 'cron', expression: '0 9 * * MON-FRI', time_zone: 'Europe/London' },
        target: { type: 'webhook', url: 'https://example.com/hook', headers: { 'x-suite': suite } },
        payload: { n },
        policies: { misfire: 'SKIP', retry: { max_attempts: 3 } },
        labels: { suite },
      },
    });
    if (!data) throw new Error(`create ${n}: ${JSON.stringify(error)}`);
    created.push(data);
  }

  const first = created[0]!;
  const got = await client.GET('/v1/jobs/{job_id}', { params: { path: { job_id: first.job_id } } });
  if (!got.data) throw new Error(`get: ${JSON.stringify(got.error)}`);

  const pages: string[][] = [];
  let pageToken: string | undefined;
  do {
    const page = await client.GET('/v1/jobs', {
      params: { query: { label: [`suite=${suite}`], page_size: 2, page_token: pageToken } },
    });
    if (!page.data) throw new Error(`list: ${JSON.stringify(page.error)}`);
    pages.push(page.data.jobs.map((j) => j.job_id));
    pageToken = page.data.next_page_token || undefined;
  } while (pageToken && pages.length < 10);

  const patch = await client.PATCH('/v1/jobs/{job_id}', {
    params: { path: { job_id: first.job_id }, header: { 'If-Match': `"${first.etag}"` } },
    body: { labels: { suite, patched: 'yes' } },
  });
  if (!patch.data) throw new Error(`patch: ${JSON.stringify(patch.error)}`);
  const stale = await client.PATCH('/v1/jobs/{job_id}', {
    params: { path: { job_id: first.job_id }, header: { 'If-Match': `"${first.etag}"` } },
    body: { labels: {} },
  });

  const pause = await client.POST('/v1/jobs/{job_id}/pause', { params: { path: { job_id: first.job_id } } });
  if (!pause.data) throw new Error(`pause: ${JSON.stringify(pause.error)}`);

  const del = await client.DELETE('/v1/jobs/{job_id}', { params: { path: { job_id: first.job_id } } });
  const gone = await client.GET('/v1/jobs/{job_id}', { params: { path: { job_id: first.job_id } } });

  const invalid = await client.POST('/v1/jobs', {
    body: {
      schedule: { kind: 'cron', expression: 'not a cron', time_zone: 'Nowhere/Else' },
      target: { type: 'webhook', url: 'https://example.com/hook' },
    },
  });

  return {
    created,
    got: { job: got.data, etag: got.response.headers.get('etag') },
    pages,
    patched: patch.data,
    paused: pause.data,
    deletedStatus: del.response.status,
    afterDelete: { status: gone.response.status, error: gone.error },
    invalid: { status: invalid.response.status, error: invalid.error },
    stale: { status: stale.response.status, error: stale.error },
  };
}
