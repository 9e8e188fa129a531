/**
 * No request can hold the API's event loop: worst-case schedule previews (`0 0 29 2 *`, count
 * 1000, each in a time zone the server has not used yet: before issue 24 each took 1.6-2.6 s on
 * the event loop) in flight together while a health check is asked again and again. The health
 * check's latency while they run is compared with its latency on the idle server.
 */
import { startApp, type AppProcess } from '../support/apps';
import { freePort, isolate, type Isolation } from '../support/env';
import { contractFetch } from '../support/openapi';

const ROUNDS = 5;
const CONCURRENT = 3;
const ZONES = [
  'Europe/Vilnius',
  'America/Bogota',
  'Asia/Kathmandu',
  'Africa/Casablanca',
  'Pacific/Chatham',
  'America/St_Johns',
  'Australia/Lord_Howe',
  'Asia/Tehran',
  'America/Santiago',
  'Europe/Dublin',
  'Pacific/Apia',
  'America/Havana',
  'Asia/Gaza',
  'Atlantic/Azores',
  'America/Asuncion',
];

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe('API event loop under worst-case previews', () => {
  let iso: Isolation;
  let api: AppProcess;
  /** Every REST response checked against the served OpenAPI document. */
  let apiFetch: typeof fetch;

  beforeAll(async () => {
    iso = isolate('eventloop');
    api = startApp('api', iso.env({ TICKWORK_GRPC_PORT: String(await freePort()) }), await freePort());
    await api.ready();
    apiFetch = await contractFetch(api.url);
  }, 120_000);

  afterAll(async () => {
    await api?.stop();
    await iso?.dispose();
  });

  const health = async (): Promise<number> => {
    const started = performance.now();
    const res = await apiFetch(`${api.url}/health/live`).catch((e: Error) => {
      // An event loop held for seconds outlasts the client's connect timeout.
      throw new Error(
        `health check failed after ${(performance.now() - started).toFixed(0)} ms: ${String((e.cause as Error | undefined)?.message ?? e.message)}`,
      );
    });
    await res.arrayBuffer();
    expect(res.status).toBe(200);
    return performance.now() - started;
  };
  const preview = async (zone: string) => {
    const res = await apiFetch(`${api.url}/v1/schedules/preview`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        schedule: { kind: 'cron', expression: '0 0 29 2 *', time_zone: zone },
        count: 1000,
      }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { fires: unknown[]; truncated: boolean; truncated_by: string };
  };

  it('a health check sent while worst-case previews run is not delayed by more than 50 ms', async () => {
    // Warm the server's code paths (not its zones: each round uses zones it has never seen).
    await preview('UTC');
    for (let i = 0; i < 5; i++) await health();

    const idle: number[] = [];
    const during: number[] = [];
    const perRound: string[] = [];
    const results: Awaited<ReturnType<typeof preview>>[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const idleNow: number[] = [];
      for (let i = 0; i < 9; i++) idleNow.push(await health());
      const zones = ZONES.slice(round * CONCURRENT, (round + 1) * CONCURRENT);
      let running = true;
      const previews = Promise.all(zones.map(preview)).finally(() => (running = false));
      const duringNow: number[] = [];
      // Let the requests reach the server, then ask for health as long as a preview runs.
      await new Promise((r) => setTimeout(r, 5));
      while (running) duringNow.push(await health());
      results.push(...(await previews));
      // Health checks were answered all along, not only once the previews were done.
      expect(duringNow.length).toBeGreaterThanOrEqual(5);
      idle.push(...idleNow);
      during.push(...duringNow);
      perRound.push(
        `${duringNow.length} checks, median ${median(duringNow).toFixed(1)} ms (idle ${median(idleNow).toFixed(1)}), worst ${Math.max(...duringNow).toFixed(1)} ms`,
      );
    }
    const delay = median(during) - median(idle);
    if (process.env.TEST_VERBOSE)
      process.stdout.write(
        `health check while previews ran: delay ${delay.toFixed(1)} ms (median ${median(during).toFixed(1)} vs idle ${median(idle).toFixed(1)}); per round: ${perRound.join('; ')}\n`,
      );
    // Medians: on a busy host the OS can stall any single request; a preview holding the event
    // loop delays every check sent while it runs.
    expect(delay).toBeLessThan(50);
    // Each preview did its work: to its horizon (24 leap days in 100 years), or cut by its work
    // budget on a busy host, saying so.
    for (const p of results) {
      expect(p.fires.length).toBeGreaterThan(0);
      expect(p.truncated).toBe(true);
      expect(['HORIZON', 'WORK_BUDGET']).toContain(p.truncated_by);
    }
  }, 180_000);
});
