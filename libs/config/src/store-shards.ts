/**
 * The store's shard map: which PostgreSQL database holds each shard's jobs, fires, batches, leases
 * and runs. Read from TICKWORK_STORE_SHARDS (`0-5=postgres://a/tickwork,6-11=postgres://b/tickwork`);
 * absent, every shard lives in DATABASE_URL.
 */
import type { EnvReader } from './env';

export const STORE_SHARDS_VARIABLE = 'TICKWORK_STORE_SHARDS';

/** One database of the map and the shards it holds (ascending). */
export interface ShardDatabase {
  readonly url: string;
  /** The database's identity, without credentials or options: `host:port/name` (see databaseIdentity). */
  readonly identity: string;
  readonly shards: readonly number[];
}

export interface StoreShardMap {
  /** Databases in the order of their lowest shard; the one holding shard 0 first. */
  readonly databases: readonly ShardDatabase[];
  /** Index into `databases` of each shard's database. */
  readonly databaseOfShard: readonly number[];
}

/**
 * Who a database is, whatever the credentials or options of the URL that reaches it: host (lower
 * case), port (5432 when absent) and database name. Two entries with one identity are one database.
 */
export function databaseIdentity(url: string): string {
  const u = new URL(url);
  const name = decodeURIComponent(u.pathname.replace(/^\//, ''));
  return `${u.hostname.toLowerCase()}:${u.port || '5432'}/${name}`;
}

/** The map that puts every shard in one database (the default). */
export function singleDatabaseMap(url: string, shardCount: number): StoreShardMap {
  const shards = Array.from({ length: shardCount }, (_, s) => s);
  return {
    databases: [{ url, identity: databaseIdentity(url), shards }],
    databaseOfShard: shards.map(() => 0),
  };
}

/**
 * Parses a shard map: comma-separated `range=url` entries, a range being `N` or `N-M`. Every shard
 * 0..shardCount-1 must be in exactly one range; a database may take several ranges. Problems are
 * reported through `problem` naming the variable; null when there was any.
 */
export function parseStoreShardMap(
  raw: string,
  shardCount: number,
  problem: (message: string) => void,
  variable = STORE_SHARDS_VARIABLE,
): StoreShardMap | null {
  let problems = 0;
  const report = (m: string) => {
    problems++;
    problem(`${variable}: ${m}`);
  };
  const owner: (number | undefined)[] = Array.from({ length: shardCount }, () => undefined);
  const databases: { url: string; identity: string; shards: number[] }[] = [];
  const entries = raw
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e.length > 0);
  if (entries.length === 0) report('names no database (expected e.g. 0-5=postgres://host:5432/tickwork,…)');
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    const range = eq < 0 ? entry : entry.slice(0, eq).trim();
    const url = eq < 0 ? '' : entry.slice(eq + 1).trim();
    const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(range);
    if (eq < 0 || !m) {
      report(`${JSON.stringify(redacted(entry))} must be <shard>=<url> or <first>-<last>=<url>`);
      continue;
    }
    const first = Number(m[1]);
    const last = m[2] === undefined ? first : Number(m[2]);
    if (last < first || last >= shardCount) {
      report(
        `range ${range} must run from a lower to a higher shard within 0-${shardCount - 1} (TICKWORK_SHARDS=${shardCount})`,
      );
      continue;
    }
    let identity: string;
    try {
      const u = new URL(url);
      if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') throw new Error('protocol');
      if (!u.hostname || u.pathname.replace(/^\//, '') === '') throw new Error('database');
      identity = databaseIdentity(url);
    } catch {
      report(
        `range ${range} has ${JSON.stringify(redacted(url))}: must be a postgres:// URL naming a host and a database`,
      );
      continue;
    }
    let db = databases.find((d) => d.identity === identity);
    if (!db) {
      db = { url, identity, shards: [] };
      databases.push(db);
    } else if (db.url !== url) {
      report(`${identity} is reached by two different URLs: use one`);
      continue;
    }
    for (let s = first; s <= last; s++) {
      if (owner[s] !== undefined) {
        report(`shard ${s} is mapped twice`);
        continue;
      }
      owner[s] = databases.indexOf(db);
      db.shards.push(s);
    }
  }
  const missing = owner.flatMap((o, s) => (o === undefined ? [s] : []));
  // Only when every entry parsed: a refused entry would show its shards as missing too.
  if (problems === 0 && entries.length > 0 && missing.length > 0)
    report(`shards ${compactRanges(missing)} are in no database (every shard 0-${shardCount - 1} needs one)`);
  if (problems > 0) return null;
  // Ordered by lowest shard, so the same map written in another order is the same map.
  const ordered = databases
    .map((d) => ({ ...d, shards: [...d.shards].sort((a, b) => a - b) }))
    .sort((a, b) => a.shards[0]! - b.shards[0]!);
  const databaseOfShard = Array.from({ length: shardCount }, (_, s) =>
    ordered.findIndex((d) => d.shards.includes(s)),
  );
  return { databases: ordered, databaseOfShard };
}

/** Reads TICKWORK_STORE_SHARDS (default: every shard in `defaultUrl`). */
export function readStoreShardMap(r: EnvReader, shardCount: number, defaultUrl: string): StoreShardMap {
  const raw = r.optionalString(STORE_SHARDS_VARIABLE);
  if (raw === undefined) return singleDatabaseMap(defaultUrl, shardCount);
  return (
    parseStoreShardMap(raw, shardCount, (m) => r.problem(m)) ?? singleDatabaseMap(defaultUrl, shardCount)
  );
}

/** `0-3, 7, 9-11` for a sorted list of shards. */
export function compactRanges(shards: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < shards.length; ) {
    let j = i;
    while (j + 1 < shards.length && shards[j + 1] === shards[j]! + 1) j++;
    out.push(i === j ? `${shards[i]}` : `${shards[i]}-${shards[j]}`);
    i = j + 1;
  }
  return out.join(', ');
}

/** A URL with its password masked, for messages. */
function redacted(text: string): string {
  return text.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@');
}
