/**
 * The 1 s resource sampler: CPU % and RSS of each named process (from /proc), the CPU of the
 * shared services (PostgreSQL, the Kafka broker, Redis) and of the whole box, Redis memory and
 * commands/s, the suite's PostgreSQL databases' size and transactions/s,
 * and the size of the running system's Kafka topics on disk.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createPool, type Pool } from '@tickwork/store';
import { config } from './config';
import type { NamedProcess } from './contender';
import { redisInfo } from './redis';

export interface Sample {
  /** Seconds since the sampler started. */
  readonly t: number;
  readonly cpuPct: Record<string, number>;
  /** CPU % of a core of each shared service (all its processes). */
  readonly serviceCpuPct: Record<string, number>;
  /** CPU % of a core of the whole box (every process; 100 × cores at most). */
  readonly boxCpuPct: number;
  readonly rssMb: Record<string, number>;
  readonly redisMb: number;
  readonly redisOpsPerSec: number;
  readonly pgMb: number;
  readonly pgXactPerSec: number;
  readonly kafkaMb: number;
}

export interface ResourceSummary {
  /** Mean CPU % of a core per process, and of all of them together. */
  readonly cpuPctMean: Record<string, number>;
  readonly cpuPctTotalMean: number;
  /**
   * CPU seconds over the sampled span: each named process, each shared service, and the whole
   * box. The box's figure is what a workload cost everything on the machine, services included.
   */
  readonly cpuSec?: Record<string, number>;
  readonly boxCpuSec?: number;
  readonly rssMbMax: Record<string, number>;
  readonly redisMbMax: number;
  readonly redisOpsPerSecMean: number;
  readonly pgMbMax: number;
  readonly pgXactPerSecMean: number;
  readonly kafkaMbMax: number;
}

const TICKS_PER_SEC = 100;
const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const round1 = (x: number) => Math.round(x * 10) / 10;

/** CPU ticks (user + system, 100 a second) a process has used so far; NaN once it is gone. */
export function cpuTicks(pid: number): number {
  try {
    // Fields after the command name (which may hold spaces): utime is the 14th field, stime the 15th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return NaN;
  }
}

/**
 * Busy ticks of the whole box (all cores), from the first line of /proc/stat. With `steal`, the
 * time other VMs took from this one counts as busy (what a workload cost the box); without it,
 * only this box's own processes count (whether anything here is still working).
 */
export function boxTicks(steal = true): number {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal: everything but idle and iowait.
    return f[0]! + f[1]! + f[2]! + f[5]! + f[6]! + (steal ? (f[7] ?? 0) : 0);
  } catch {
    return NaN;
  }
}

/**
 * Waits until the box's processes use under `belowPctOfCore` % of one core over a 1 s window
 * (idle systems left running stay under it; a vacuum or a system still finishing its last
 * work does not), at most `timeoutMs`. Resolves to how long it waited and whether it got quiet.
 */
export async function quietBox(
  belowPctOfCore = 35,
  timeoutMs = 30_000,
): Promise<{ waitedMs: number; quiet: boolean }> {
  const started = Date.now();
  for (;;) {
    const before = boxTicks(false);
    const at = Date.now();
    await new Promise((r) => setTimeout(r, 1_000));
    const pct = ((boxTicks(false) - before) / TICKS_PER_SEC / ((Date.now() - at) / 1000)) * 100;
    // Unreadable /proc: nothing to wait for.
    if (!(pct >= belowPctOfCore)) return { waitedMs: Date.now() - started, quiet: true };
    if (Date.now() - started >= timeoutMs) return { waitedMs: Date.now() - started, quiet: false };
  }
}

const SERVICES = ['PostgreSQL', 'Kafka broker', 'schema registry', 'Redis'] as const;
type Service = (typeof SERVICES)[number];

/** Which shared service a process belongs to, from its name and command line; null for none. */
function serviceOf(pid: number): Service | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    if (comm === 'postgres') return 'PostgreSQL';
    if (comm.startsWith('redis-server')) return 'Redis';
    if (comm === 'java') {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmd.includes('-Dtickwork.stack.service=kafka')) return 'Kafka broker';
      if (cmd.includes('-Dtickwork.stack.service=registry')) return 'schema registry';
    }
  } catch {
    // gone between the listing and the read
  }
  return null;
}

/**
 * CPU ticks of each shared service's processes, by pid. PostgreSQL starts a process per
 * connection, so the listing is taken at every sample; a pid's service is looked up once.
 */
class ServiceTicks {
  private readonly known = new Map<number, Service | null>();

  read(): Map<number, { service: Service; ticks: number }> {
    const out = new Map<number, { service: Service; ticks: number }>();
    let pids: number[];
    try {
      pids = readdirSync('/proc')
        .filter((d) => /^\d+$/.test(d))
        .map(Number);
    } catch {
      return out;
    }
    for (const pid of pids) {
      if (!this.known.has(pid)) this.known.set(pid, serviceOf(pid));
      const service = this.known.get(pid);
      if (!service) continue;
      const ticks = cpuTicks(pid);
      if (Number.isFinite(ticks)) out.set(pid, { service, ticks });
    }
    return out;
  }
}

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

/**
 * Bytes on disk of the topics named `<prefix>.*`: only the running system's topics, listed once a
 * second. Walking every topic the suite ever made (thousands of partition folders after a few
 * runs) cost the driver about a third of a core, taken from the system under test.
 */
function kafkaMb(prefix: string | undefined): number {
  if (!prefix) return 0; // a system that keeps nothing in Kafka
  let bytes = 0;
  try {
    for (const dir of readdirSync(config.kafkaLogDir))
      if (dir.startsWith(`${prefix}.`))
        for (const f of readdirSync(join(config.kafkaLogDir, dir)))
          bytes += statSync(join(config.kafkaLogDir, dir, f)).size;
  } catch {
    return NaN;
  }
  return Math.round(bytes / 2 ** 20);
}

export class ResourceSampler {
  readonly samples: Sample[] = [];
  private timer?: NodeJS.Timeout;
  private readonly pool: Pool = createPool(config.adminDatabaseUrl, { max: 1 });
  private last?: {
    at: number;
    ticks: Map<number, number>;
    services: Map<number, { service: Service; ticks: number }>;
    box: number;
    redisOps: number;
    xacts: number;
  };
  private readonly started = Date.now();
  private readonly serviceTicks = new ServiceTicks();
  /** CPU ticks summed over the sampled span, by process or service name, and of the box. */
  private readonly spent = new Map<string, number>();
  private boxSpent = 0;

  /** `kafkaTopicPrefix`: the running system's topics, whose size on disk is sampled (none: 0). */
  constructor(
    private readonly processes: readonly NamedProcess[],
    private readonly kafkaTopicPrefix?: string,
  ) {}

  start(): void {
    void this.sample();
    this.timer = setInterval(() => void this.sample(), 1_000);
  }

  private async sample(): Promise<void> {
    const at = Date.now();
    const ticks = new Map(this.processes.map((p) => [p.pid, cpuTicks(p.pid)]));
    const services = this.serviceTicks.read();
    const box = boxTicks();
    const [info, pg] = await Promise.all([
      redisInfo(),
      this.pool
        .query<{ bytes: string; xacts: string }>(
          `SELECT coalesce(sum(pg_database_size(datname)), 0) AS bytes, coalesce(sum(xact_commit + xact_rollback), 0) AS xacts
             FROM pg_stat_database WHERE datname LIKE 'bench_suite_%'`,
        )
        .then((r) => r.rows[0]!)
        .catch(() => ({ bytes: 'NaN', xacts: 'NaN' })),
    ]);
    const redisOps = Number(info.total_commands_processed);
    const xacts = Number(pg.xacts);
    const prev = this.last;
    this.last = { at, ticks, services, box, redisOps, xacts };
    if (!prev) return;
    const secs = (at - prev.at) / 1000;
    const pct = (t: number) => round1((t / TICKS_PER_SEC / secs) * 100);
    const cpuPct: Record<string, number> = {};
    const rss: Record<string, number> = {};
    for (const p of this.processes) {
      const spent = ticks.get(p.pid)! - prev.ticks.get(p.pid)!;
      cpuPct[p.name] = pct(spent);
      if (Number.isFinite(spent)) this.spend(p.name, spent);
      rss[p.name] = rssMb(p.pid);
    }
    const serviceSpent = new Map<string, number>(SERVICES.map((s) => [s, 0]));
    for (const [pid, now] of services) {
      // A process born since the last sample (a new connection's backend) counts all its ticks.
      const spent = now.ticks - (prev.services.get(pid)?.ticks ?? 0);
      serviceSpent.set(now.service, serviceSpent.get(now.service)! + spent);
    }
    for (const [name, spent] of serviceSpent) this.spend(name, spent);
    if (Number.isFinite(box - prev.box)) this.boxSpent += box - prev.box;
    this.samples.push({
      t: Math.round((at - this.started) / 100) / 10,
      cpuPct,
      serviceCpuPct: Object.fromEntries([...serviceSpent].map(([n, t]) => [n, pct(t)])),
      boxCpuPct: pct(box - prev.box),
      rssMb: rss,
      redisMb: Math.round(Number(info.used_memory) / 2 ** 20),
      redisOpsPerSec: Math.round((redisOps - prev.redisOps) / secs),
      pgMb: Math.round(Number(pg.bytes) / 2 ** 20),
      pgXactPerSec: Math.round((xacts - prev.xacts) / secs),
      kafkaMb: kafkaMb(this.kafkaTopicPrefix),
    });
  }

  private spend(name: string, ticks: number): void {
    this.spent.set(name, (this.spent.get(name) ?? 0) + ticks);
  }

  async stop(): Promise<ResourceSummary> {
    clearInterval(this.timer);
    await this.sample();
    await this.pool.end();
    const s = this.samples;
    const names = this.processes.map((p) => p.name);
    const cpuPctMean = Object.fromEntries(names.map((n) => [n, round1(mean(s.map((x) => x.cpuPct[n]!)))]));
    return {
      cpuPctMean,
      cpuPctTotalMean: round1(Object.values(cpuPctMean).reduce((a, b) => a + b, 0)),
      cpuSec: Object.fromEntries([...this.spent].map(([n, t]) => [n, round1(t / TICKS_PER_SEC)])),
      boxCpuSec: round1(this.boxSpent / TICKS_PER_SEC),
      rssMbMax: Object.fromEntries(names.map((n) => [n, Math.max(...s.map((x) => x.rssMb[n]!))])),
      redisMbMax: Math.max(...s.map((x) => x.redisMb)),
      redisOpsPerSecMean: Math.round(mean(s.map((x) => x.redisOpsPerSec))),
      pgMbMax: Math.max(...s.map((x) => x.pgMb)),
      pgXactPerSecMean: Math.round(mean(s.map((x) => x.pgXactPerSec))),
      kafkaMbMax: Math.max(...s.map((x) => x.kafkaMb)),
    };
  }
}
