/**
 * The console, used as a person would: Debian's Chromium (driven by playwright-core) against the
 * real API, scheduler and executor on the shared Kafka and PostgreSQL, with a real webhook
 * receiver. Signs in, creates a job (a bad field first), previews, triggers, watches the run and
 * the occurrence, pauses, bulk-resumes by label, replays a dead letter, is refused another
 * tenant's job, and as an admin sees the cluster and lateness. Takes the screenshots in docs/console/.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startApp, type AppProcess } from '../support/apps';
import { eventually, freePort, isolate, type Isolation } from '../support/env';
import { OpenApiContract } from '../support/openapi';
import { WebhookReceiver } from '../support/receiver';

const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const ACME = 'tok-console-acme-0123456789abcdef';
const GLOBEX = 'tok-console-globex-0123456789abcdef';
const ADMIN = 'tok-console-admin-0123456789abcdef';
const TENANTS = JSON.stringify({
  tenants: { acme: {}, globex: {} },
  tokens: [
    { name: 'acme-ops', sha256: sha(ACME), role: 'tenant', tenant: 'acme' },
    { name: 'globex-ops', sha256: sha(GLOBEX), role: 'tenant', tenant: 'globex' },
    { name: 'root', sha256: sha(ADMIN), role: 'admin' },
  ],
});
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// The trace the browser's Trigger now request carries: the run of that fire shows its id.
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
const SHOTS = join(__dirname, '..', '..', 'docs', 'console');

type Json = Record<string, unknown>;

describe('console in a real browser', () => {
  let iso: Isolation;
  let receiver: WebhookReceiver;
  let apps: AppProcess[] = [];
  let api: AppProcess;
  let browser: Browser;
  let page: Page;
  // Script errors and console.error calls; a refused request's own network line is not one (see below).
  const browserErrors: string[] = [];

  let contract: OpenApiContract;
  /** The document check of each API response the browser received, gathered per test. */
  const browserChecks: Promise<string[]>[] = [];
  /** How many of the browser's API responses were checked against the document. */
  let browserChecked = 0;

  const rest = async (method: string, path: string, token: string, body?: unknown) => {
    const res = await contract.fetch(api.url)(`${api.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as Json };
  };
  /** Waits for a webhook call on `path`; on a timeout, the error carries the apps' last lines. */
  const pipelineDelivers = (what: string, path: string, timeoutMs: number) =>
    eventually(what, () => (receiver.calls.some((c) => c.path === path) ? true : undefined), timeoutMs).catch(
      (e: Error) => {
        throw new Error(`${e.message}\n${apps.map((a) => `--- ${a.name} ---\n${a.tail(25)}`).join('\n')}`);
      },
    );
  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const console$ = (hash = '') => `${api.url}/console/${hash}`;
  const navTo = (name: string) =>
    page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: test/run installs Debian's chromium`);
    mkdirSync(SHOTS, { recursive: true });
    iso = isolate('console');
    receiver = await new WebhookReceiver().start();
    // Calls to /fail fail, so that job's only attempt is dead-lettered.
    receiver.respond = (n) => (receiver.calls[n]?.path.startsWith('/fail') ? 500 : 200);
    const env = iso.env({
      TICKWORK_TENANTS: TENANTS,
      TICKWORK_WEBHOOK_ALLOW: '127.0.0.1',
      TICKWORK_TICK_MS: '100',
      TICKWORK_GRPC_PORT: String(await freePort()),
    });
    api = startApp('api', env, await freePort());
    await api.ready();
    contract = await OpenApiContract.served(api.url);
    const scheduler = startApp('scheduler', env, await freePort());
    const executor = startApp('executor', env, await freePort());
    apps = [api, scheduler, executor];
    await Promise.all([scheduler.ready(), executor.ready()]);
    // One fire end to end before the browser starts: on a broker that has just started, groups and
    // producer ids can take a while to settle. Another tenant's job, deleted once it fired.
    const warmUp = await rest('POST', '/v1/jobs', GLOBEX, {
      job_id: 'warm-up',
      schedule: { kind: 'once', at: new Date(Date.now() + 1_000).toISOString() },
      target: { type: 'webhook', url: receiver.url('/warm-up') },
    });
    expect(warmUp.status).toBe(201);
    await pipelineDelivers('a warm-up fire', '/warm-up', 90_000);
    expect((await rest('DELETE', '/v1/jobs/warm-up', GLOBEX)).status).toBeLessThan(300);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const context = await browser.newContext({
      viewport: { width: 1360, height: 860 },
      timezoneId: 'America/New_York',
      locale: 'en-GB',
    });
    // The copy button writes to the clipboard; the test reads it back.
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: api.url });
    page = await context.newPage();
    page.setDefaultTimeout(20_000);
    page.on('pageerror', (e) => browserErrors.push(`pageerror: ${e.message}`));
    // The console is a client of the REST API too: every answer it gets must be one the document allows.
    page.on('response', (r) => {
      if (!new URL(r.url()).pathname.startsWith('/v1/')) return;
      browserChecks.push(
        r.text().then(
          (body) => {
            browserChecked++;
            return contract.problems({
              method: r.request().method(),
              url: r.url(),
              status: r.status(),
              contentType: r.headers()['content-type'] ?? null,
              body,
            });
          },
          // A body the browser no longer holds (the page moved on) cannot be judged.
          () => [],
        ),
      );
    });
    page.on('console', (m) => {
      // Chromium logs every non-2xx fetch as "Failed to load resource"; the 400s, 401s and 404s
      // this test provokes on purpose are answers the console shows, not errors of the console.
      if (
        m.type() === 'error' &&
        !/Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())
      )
        browserErrors.push(m.text());
    });
  }, 180_000);

  afterEach(async () => {
    expect((await Promise.all(browserChecks.splice(0))).flat()).toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    await Promise.all(apps.map((a) => a.stop()));
    await receiver?.stop();
    await iso?.dispose();
  });

  it('signs in with a tenant token (a wrong one is refused with a message)', async () => {
    await page.goto(console$());
    await page.getByLabel('API token').fill('not-a-token-at-all-0123456789');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'not known' }).waitFor();
    await shot('sign-in');
    await page.getByLabel('API token').fill(ACME);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Jobs of acme' }).waitFor();
    await page.getByText('No jobs match').waitFor();
  });

  it('creates a cron job: a bad field is named, fixed, previewed, created', async () => {
    await navTo('New job');
    await page.getByLabel('Job id').fill('nightly-report');
    await page.getByLabel('Cron expression').fill('0 9 * * MONDAY-FRIDAY');
    await page.getByLabel('Time zone').fill('Europe/London');
    await page.getByLabel('URL').fill(receiver.url('/hook'));
    await page.getByLabel('Labels').fill('team=data, env=staging');
    await page.getByLabel('Payload (JSON)').fill('{"report": "nightly"}');
    await page.getByRole('button', { name: 'Create job' }).click();
    const fieldError = page.locator('#err-expression');
    await fieldError.waitFor();
    expect(await fieldError.textContent()).toMatch(/\S/);
    expect(await page.getByLabel('Cron expression').getAttribute('aria-invalid')).toBe('true');
    await page.getByRole('alert').filter({ hasText: 'The API refused the job' }).waitFor();
    // The preview names the bad field too, and does not read the typo as a schedule.
    await page.locator('.preview .field-error').waitFor();
    expect(await page.locator('.preview').textContent()).toContain('0 9 * * MONDAY-FRIDAY, Europe/London');
    // Nothing was stored.
    expect((await rest('GET', '/v1/jobs/nightly-report', ACME)).status).toBe(404);
    await shot('create-invalid');

    await page.getByLabel('Cron expression').fill('0 9 * * MON-FRI');
    // Editing the field takes its stale message away.
    await fieldError.waitFor({ state: 'detached' });
    const previewFires = page.locator('.preview ol.fires li');
    await eventually(
      'the preview of 10 fires',
      async () => ((await previewFires.count()) === 10 ? true : undefined),
      15_000,
    );
    expect(await page.locator('.preview').textContent()).toContain('at 09:00 on weekdays, Europe/London');
    expect(await previewFires.first().textContent()).toMatch(/09:00 Europe\/London/);
    await shot('create');
    await page.getByRole('button', { name: 'Create job' }).click();
    await page.getByRole('heading', { name: /nightly-report/ }).waitFor();
    const stored = await rest('GET', '/v1/jobs/nightly-report', ACME);
    expect(stored.status).toBe(200);
    expect(stored.body.labels).toEqual({ team: 'data', env: 'staging' });
  });

  it('triggers it and shows the run (with its trace id) and the occurrence; pauses it', async () => {
    // As if the console sat behind a traced proxy: the trigger request carries a W3C context.
    await page.setExtraHTTPHeaders({ traceparent: TRACEPARENT });
    await page.getByRole('button', { name: 'Trigger now' }).click();
    await page.getByRole('status').filter({ hasText: 'Triggered' }).waitFor();
    await page.setExtraHTTPHeaders({});
    await pipelineDelivers('the webhook call', '/hook', 30_000);
    await eventually(
      'the run to show as SUCCEEDED',
      async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        await page.waitForLoadState('networkidle');
        return (
          await page
            .locator('#run-1')
            .textContent()
            .catch(() => '')
        )?.includes('SUCCEEDED')
          ? true
          : undefined;
      },
      30_000,
      500,
    );
    expect(await page.locator('#run-1').textContent()).toContain('200');
    // The run shows the trace its fire was made in, and copies it.
    expect(await page.locator('#run-1').textContent()).toContain(TRACE_ID);
    const runs = await rest('GET', '/v1/jobs/nightly-report/runs', ACME);
    expect((runs.body.runs as Json[])[0]?.trace_id).toBe(TRACE_ID);
    await page
      .locator('#run-1')
      .getByRole('button', { name: `Copy trace id ${TRACE_ID}` })
      .click();
    await page
      .locator('#run-1')
      .getByRole('button', { name: /Copy trace id/ })
      .filter({ hasText: 'Copied' })
      .waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(TRACE_ID);
    const ledger = page.locator('ol.timeline li').first();
    expect(await ledger.textContent()).toMatch(/FIRED.*triggered by hand.*fence 1/s);
    expect(await page.locator('section', { hasText: 'Definition' }).first().textContent()).toContain(
      'at 09:00 on weekdays, Europe/London',
    );
    await shot('job');

    await page.getByRole('button', { name: 'Pause' }).click();
    await page.locator('h1 .badge', { hasText: 'PAUSED' }).waitFor();
    expect((await rest('GET', '/v1/jobs/nightly-report', ACME)).body.status).toBe('PAUSED');
  });

  it('bulk-resumes the paused jobs of a label, asking first with the count', async () => {
    for (const id of ['etl-orders', 'etl-users']) {
      const created = await rest('POST', '/v1/jobs', ACME, {
        job_id: id,
        schedule: { kind: 'interval', every_ms: 3_600_000 },
        target: { type: 'webhook', url: receiver.url('/hook') },
        labels: { team: 'data', env: 'prod' },
      });
      expect(created.status).toBe(201);
      expect((await rest('POST', `/v1/jobs/${id}/pause`, ACME)).status).toBe(200);
    }
    // Another team's paused job, which the label selector must leave alone.
    await rest('POST', '/v1/jobs', ACME, {
      job_id: 'web-sitemap',
      schedule: { kind: 'cron', expression: '*/15 * * * *', time_zone: 'UTC' },
      target: { type: 'kafka', topic: 'sitemaps' },
      labels: { team: 'web' },
    });
    await rest('POST', '/v1/jobs/web-sitemap/pause', ACME);

    await navTo('Jobs');
    await page.getByLabel('Labels').fill('team=data');
    await page.getByLabel('Status').selectOption('PAUSED');
    await page.getByRole('button', { name: 'Apply' }).click();
    const rows = page.locator('table.jobs tbody tr');
    await eventually(
      '3 paused team=data jobs',
      async () => ((await rows.count()) === 3 ? true : undefined),
      30_000,
    );
    await page.getByLabel('Select every job on this page').check();
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('heading', { name: 'Resume 3 jobs?' }).waitFor();
    await shot('jobs-bulk-confirm');
    await dialog.getByRole('button', { name: 'Resume 3' }).click();
    await page.getByRole('status').filter({ hasText: 'Resume: 3 of 3 jobs done' }).waitFor();
    for (const id of ['nightly-report', 'etl-orders', 'etl-users'])
      expect((await rest('GET', `/v1/jobs/${id}`, ACME)).body.status).toBe('SCHEDULED');
    expect((await rest('GET', '/v1/jobs/web-sitemap', ACME)).body.status).toBe('PAUSED');

    // The selector's inequality: team=data but not prod.
    await page.getByLabel('Status').selectOption('');
    await page.getByLabel('Labels').fill('team=data,env!=prod');
    await page.getByRole('button', { name: 'Apply' }).click();
    await eventually('only nightly-report', async () =>
      (await rows.count()) === 1 && (await rows.first().textContent())?.includes('nightly-report')
        ? true
        : undefined,
    );
    await page.goto(console$('#/jobs'));
    await eventually('all 4 jobs', async () => ((await rows.count()) === 4 ? true : undefined));
    const nightly = rows.filter({ hasText: 'nightly-report' });
    expect(await nightly.textContent()).toMatch(/at 09:00 on weekdays, Europe\/London.*0 9 \* \* MON-FRI/s);
    expect(await nightly.textContent()).toContain('SUCCEEDED');
    await shot('jobs');
  });

  it('replays a dead letter', async () => {
    const created = await rest('POST', '/v1/jobs', ACME, {
      job_id: 'invoice-push',
      schedule: { kind: 'interval', every_ms: 3_600_000 },
      target: { type: 'webhook', url: receiver.url('/fail') },
      policies: { retry: { max_attempts: 1 } },
      labels: { team: 'billing' },
    });
    expect(created.status).toBe(201);
    expect((await rest('POST', '/v1/jobs/invoice-push/trigger', ACME)).status).toBe(202);
    await eventually(
      'the dead letter',
      async () => {
        const dl = await rest('GET', '/v1/dead-letters?job_id=invoice-push', ACME);
        return (dl.body.dead_letters as Json[]).length > 0 ? true : undefined;
      },
      60_000,
      300,
    );
    await navTo('Dead letters');
    const row = page.locator('tbody tr', { hasText: 'invoice-push' });
    await row.waitFor();
    expect(await row.textContent()).toContain('HTTP 500');
    await shot('dead-letters');
    const calls = receiver.calls.filter((c) => c.path === '/fail').length;
    await row.getByRole('button', { name: /Replay/ }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Replay 1' }).click();
    await page.getByRole('status').filter({ hasText: 'Replayed 1 of 1' }).waitFor();
    await eventually('the replayed call', () =>
      receiver.calls.filter((c) => c.path === '/fail').length > calls ? true : undefined,
    );
    const dl = await rest('GET', '/v1/dead-letters?job_id=invoice-push', ACME);
    // The replay fails too (the receiver still answers 500), so it is a dead letter of its own.
    const first = (dl.body.dead_letters as Json[]).find((d) => d.fire_id === 'invoice-push:1');
    expect(first?.replay_fire_id).toBe('invoice-push:2');
    await row.filter({ hasText: 'replayed as invoice-push:2' }).waitFor();
  });

  it("refuses another tenant's job, and does not list it", async () => {
    expect(
      (
        await rest('POST', '/v1/jobs', GLOBEX, {
          job_id: 'globex-secret',
          schedule: { kind: 'interval', every_ms: 3_600_000 },
          target: { type: 'webhook', url: 'https://example.com/h' },
        })
      ).status,
    ).toBe(201);
    await page.goto(console$('#/jobs/globex-secret'));
    await page.getByRole('alert').filter({ hasText: 'NOT_FOUND' }).waitFor();
    await shot('other-tenant-refused');
    await page.goto(console$('#/jobs'));
    await page.locator('table.jobs tbody tr').first().waitFor();
    expect(await page.locator('table.jobs').textContent()).not.toContain('globex-secret');
  });

  it("shows a fire SLO breach in the ledger: LATE with its lateness, and the job's tolerance", async () => {
    // Tolerance 0: any start after the nominal time is LATE (a fire takes some ms from claim to
    // start), so the badge appears whatever the box's load.
    const anchor = new Date(Math.ceil((Date.now() + 2_000) / 1000) * 1000);
    const created = await rest('POST', '/v1/jobs', ACME, {
      job_id: 'slo-demo',
      schedule: { kind: 'interval', every_ms: 3_600_000, anchor: anchor.toISOString() },
      target: { type: 'webhook', url: receiver.url('/hook') },
      policies: { tolerance_ms: 0, slo_metrics: true },
    });
    expect(created.status).toBe(201);
    await page.goto(console$('#/jobs/slo-demo'));
    await eventually(
      'the LATE mark in the ledger',
      async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        await page.waitForLoadState('networkidle');
        const text =
          (await page
            .locator('ol.timeline')
            .textContent()
            .catch(() => '')) ?? '';
        return /LATE/.test(text) ? text : undefined;
      },
      60_000,
      500,
    );
    const entry = await page.locator('ol.timeline li', { hasText: 'LATE' }).first().textContent();
    expect(entry).toMatch(/FIRED.*LATE.*started \d+(\.\d)? (ms|s) after its nominal time.*tolerance/s);
    expect(await page.locator('section', { hasText: 'Definition' }).first().textContent()).toContain(
      'tolerance 0',
    );
  });

  it('shows a job with upcoming fires across a DST change', async () => {
    // 01:30 London does not exist on 28 March 2027 (spring forward): SHIFT moves it to 02:30 BST.
    const created = await rest('POST', '/v1/jobs', ACME, {
      job_id: 'dst-demo',
      schedule: {
        kind: 'cron',
        expression: '30 1 * * *',
        time_zone: 'Europe/London',
        dst_gap: 'SHIFT',
        start_at: '2027-03-25T00:00:00Z',
      },
      target: {
        type: 'webhook',
        url: receiver.url('/hook'),
        headers: { authorization: 'Bearer s3cret-value' },
      },
      payload: { nested: { a: 1, b: [1, 2, 3] } },
    });
    expect(created.status).toBe(201);
    await page.goto(console$('#/jobs/dst-demo'));
    await page.locator('li.dst .dst-note').first().waitFor();
    expect(await page.locator('li.dst').first().textContent()).toContain('spring-forward gap');
    const definition = await page
      .locator('section', { hasText: 'Target (secrets masked)' })
      .first()
      .textContent();
    expect(definition).not.toContain('s3cret-value');
    expect(definition).toContain('••••••');
    // Dates read as dates, in the job's zone: never a raw ISO string.
    expect(definition).toContain('Thu 25 Mar 2027, 00:00:00 Europe/London');
    expect(definition).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:/);
    await shot('job-dst');
  });

  it('as an admin: switches tenants, sees the cluster and the lateness', async () => {
    await page.goto(console$('#/jobs'));
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API token').fill(ADMIN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Jobs (all tenants)' }).waitFor();
    await navTo('Cluster');
    await page.getByRole('heading', { name: 'Shards' }).waitFor();
    const shards = page.locator('section[aria-labelledby="shards-title"] tbody tr');
    await eventually('4 shards', async () => ((await shards.count()) === 4 ? true : undefined));
    await eventually('owned shards', async () =>
      (await page.locator('.stat').first().textContent())?.startsWith('4of 4') ? true : undefined,
    );
    expect(await page.locator('section[aria-labelledby="lag-title"]').textContent()).toContain('.executor');
    expect(await page.getByText(/Refreshes every 5 s; observed/).textContent()).toMatch(
      /observed \w{3} \d{1,2} \w{3} \d{4}, \d\d:\d\d:\d\d America\/New_York/,
    );
    await shot('cluster');

    await navTo('Lateness');
    await page.getByRole('heading', { name: /Lateness over the last hour/ }).waitFor();
    await page.locator('svg.chart').waitFor();
    const stats = await page.locator('.cards').textContent();
    expect(stats).toMatch(/[1-9]\d*fired/);
    expect(stats).toMatch(/[1-9]\d*dead-lettered/);
    await shot('lateness');

    await page.getByLabel('Tenant', { exact: true }).fill('globex');
    await page.getByLabel('Tenant', { exact: true }).press('Enter');
    await navTo('Jobs');
    await page.getByRole('heading', { name: 'Jobs of globex' }).waitFor();
    await page.locator('table.jobs tbody tr', { hasText: 'globex-secret' }).waitFor();
    expect(await page.locator('table.jobs tbody tr').count()).toBe(1);
  });

  it('with auth off opens as the anonymous admin, under the loud banner', async () => {
    // A second API on the same database with no tokens configured: the laptop default.
    const open = startApp('api', iso.env({ TICKWORK_GRPC_PORT: String(await freePort()) }), await freePort());
    apps.push(open);
    await open.ready();
    await page.goto(`${open.url}/console/#/jobs`);
    await page.getByRole('alert').filter({ hasText: 'AUTH IS OFF' }).waitFor();
    await page.getByRole('heading', { name: 'Jobs (all tenants)' }).waitFor();
    await page.locator('table.jobs tbody tr', { hasText: 'globex-secret' }).waitFor();
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    await shot('auth-off');
    await open.stop();
  });

  it('is usable from the keyboard, labels every input, has AA contrast, and logged no browser errors', async () => {
    await page.goto(console$('#/jobs'));
    await page.reload();
    await page.locator('table.jobs').waitFor();
    await page.keyboard.press('Tab');
    // Expressions run in the page (the test's own tsconfig has no DOM types).
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to content');
    await page.keyboard.press('Enter');
    // Tab order then runs through the filters in reading order.
    for (const _ of [1, 2, 3]) await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.id')).toBeTruthy();
    for (const view of [
      '#/jobs',
      '#/new',
      '#/dead-letters',
      '#/lateness',
      '#/cluster',
      '#/jobs/nightly-report',
    ]) {
      await page.goto(console$(view));
      await page.waitForLoadState('networkidle');
      const unlabelled = await page.evaluate(`
        [...document.querySelectorAll('input, select, textarea')]
          .filter((el) => el.type !== 'hidden')
          .filter((el) => (el.labels?.length ?? 0) === 0 && !el.getAttribute('aria-label'))
          .map((el) => el.outerHTML.slice(0, 80))`);
      expect({ view, unlabelled }).toEqual({ view, unlabelled: [] });
      expect({ view, lowContrast: await page.evaluate(LOW_CONTRAST_TEXT) }).toEqual({
        view,
        lowContrast: [],
      });
    }
    expect(browserErrors).toEqual([]);
    // The browser's answers were checked (afterEach), and there were plenty of them.
    expect(browserChecked).toBeGreaterThan(50);
  });
});

/**
 * Runs in the page: every visible text below WCAG 2.1 AA contrast (4.5:1, or 3:1 for large text:
 * 24 px, or 18.66 px bold) against the background it is drawn on, found by compositing the
 * element's and its ancestors' background colours. Disabled controls are exempt, as WCAG allows.
 */
const LOW_CONTRAST_TEXT = `(() => {
  const rgba = (c) => {
    const m = c.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const [r, g, b, a] = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return [r, g, b, a === undefined || Number.isNaN(a) ? 1 : a];
  };
  const over = (top, under) => {
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat(1);
  };
  const backgroundOf = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) layers.push(c);
      if (c && c[3] >= 1) break;
    }
    return layers.reverse().reduce((under, top) => over(top, under), [255, 255, 255, 1]);
  };
  const luminance = ([r, g, b]) => {
    const lin = (v) => (v /= 255) <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  };
  const found = [];
  for (const el of document.querySelectorAll('body *')) {
    const ownText = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!ownText || el.closest(':disabled, [aria-disabled="true"]')) continue;
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || el.getClientRects().length === 0) continue;
    const color = rgba(style.color);
    if (!color) continue;
    const bg = backgroundOf(el);
    const fg = over(color, bg);
    const [hi, lo] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5))
      found.push(el.tagName.toLowerCase() + '.' + el.className + ' "' + el.textContent.trim().slice(0, 30) + '" ' + ratio.toFixed(2));
  }
  return found;
})()`;

// Only Jest's own expect is used; playwright-core brings no test runner.
export {};
