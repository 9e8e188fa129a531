/**
 * A few raw Redis commands over RESP (INFO, CONFIG GET, FLUSHDB on the suite's own db index):
 * the suite needs no Redis client of its own for them.
 */
import { connect } from 'node:net';
import { config } from './config';

type Reply = string | number | null | Reply[];

/** Parses one RESP reply at `at`; undefined when the buffer does not hold all of it yet. */
function parse(buf: string, at: number): { value: Reply; next: number } | undefined {
  const eol = buf.indexOf('\r\n', at);
  if (eol < 0) return undefined;
  const head = buf[at];
  const line = buf.slice(at + 1, eol);
  if (head === '+' || head === '-') return { value: line, next: eol + 2 };
  if (head === ':') return { value: Number(line), next: eol + 2 };
  if (head === '$') {
    const len = Number(line);
    if (len < 0) return { value: null, next: eol + 2 };
    // Lengths are in bytes; the replies read here are ASCII.
    if (buf.length < eol + 2 + len + 2) return undefined;
    return { value: buf.slice(eol + 2, eol + 2 + len), next: eol + 2 + len + 2 };
  }
  if (head === '*') {
    const items: Reply[] = [];
    let next = eol + 2;
    for (let i = 0; i < Number(line); i++) {
      const item = parse(buf, next);
      if (!item) return undefined;
      items.push(item.value);
      next = item.next;
    }
    return { value: items, next };
  }
  throw new Error(`unexpected Redis reply ${JSON.stringify(buf.slice(at, at + 40))}`);
}

/** Runs the commands in order on the suite's db index; resolves with the last reply. */
export function redis(...commands: string[][]): Promise<Reply> {
  return send(5_000, commands);
}

/**
 * Empties the suite's db index. Freeing a million delayed jobs blocks Redis for several seconds
 * in a slow hour (it stopped the 2026-12-02 00:07 run at the 5 s of other commands).
 */
export async function flushSuiteDb(): Promise<void> {
  await send(120_000, [['FLUSHDB']]);
}

function send(timeoutMs: number, commands: string[][]): Promise<Reply> {
  const all = [['SELECT', String(config.redis.db)], ...commands];
  return new Promise((resolve, reject) => {
    const socket = connect(config.redis.port, config.redis.host);
    let buf = '';
    socket.setTimeout(timeoutMs, () => {
      socket.destroy();
      reject(new Error('Redis did not answer'));
    });
    socket.on('error', reject);
    socket.on('data', (c) => {
      buf += c.toString('latin1');
      const replies: Reply[] = [];
      let at = 0;
      while (replies.length < all.length) {
        const r = parse(buf, at);
        if (!r) return;
        replies.push(r.value);
        at = r.next;
      }
      socket.destroy();
      resolve(replies[replies.length - 1]!);
    });
    socket.write(
      all
        .map((cmd) => `*${cmd.length}\r\n${cmd.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`)
        .join(''),
    );
  });
}

export async function redisInfo(): Promise<Record<string, string>> {
  try {
    const text = String(await redis(['INFO']));
    const info: Record<string, string> = {};
    for (const line of text.split('\r\n')) {
      const i = line.indexOf(':');
      if (i > 0) info[line.slice(0, i)] = line.slice(i + 1);
    }
    return info;
  } catch {
    return {};
  }
}

/**
 * Turns on Redis's append-only file with fsync every second (its durable setting, the counterpart
 * of PostgreSQL's synchronous_commit and Kafka's acks=all), once the initial rewrite is done;
 * resolves with a function that puts the previous settings back.
 */
export async function useAofEverysec(): Promise<() => Promise<void>> {
  const aof = ((await redis(['CONFIG', 'GET', 'appendonly'])) as string[])[1] ?? 'no';
  const fsync = ((await redis(['CONFIG', 'GET', 'appendfsync'])) as string[])[1] ?? 'everysec';
  await redis(['CONFIG', 'SET', 'appendfsync', 'everysec'], ['CONFIG', 'SET', 'appendonly', 'yes']);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const info = await redisInfo();
    if (
      info.aof_enabled === '1' &&
      info.aof_rewrite_in_progress === '0' &&
      info.aof_rewrite_scheduled === '0'
    )
      break;
    if (Date.now() > deadline)
      throw new Error('Redis did not finish turning on its append-only file in 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  return async () => {
    await redis(['CONFIG', 'SET', 'appendonly', aof], ['CONFIG', 'SET', 'appendfsync', fsync]);
  };
}

/** What a Redis-backed figure can lose on a crash: AOF and RDB settings as configured. */
export async function redisDurability(): Promise<string> {
  const info = await redisInfo();
  const aof = (await redis(['CONFIG', 'GET', 'appendonly'])) as string[];
  const fsync = (await redis(['CONFIG', 'GET', 'appendfsync'])) as string[];
  const save = (await redis(['CONFIG', 'GET', 'save'])) as string[];
  const persistence =
    aof[1] === 'yes'
      ? `AOF ${fsync[1]}`
      : save[1]
        ? `RDB snapshots only (save "${save[1]}")`
        : 'no persistence (no AOF, no RDB)';
  return `Redis ${info.redis_version ?? ''}: ${persistence}`;
}
