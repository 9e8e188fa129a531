/**
 * An outside producer of schedule commands built from standard tools, none of Tickwork's code:
 * Apache Avro's Python library (Debian's python3-avro) encodes each command with the schema and
 * id it reads from the registry, and kcat (librdkafka) produces the bytes with the partitioner
 * asked for. test/run installs both when missing.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { STACK } from './env';

const run = promisify(execFile);
/** Debian's interpreter, where python3-avro is installed (not whatever python3 is first on PATH). */
const PYTHON = '/usr/bin/python3';
const ENCODER = join(__dirname, 'avro_commands.py');

/**
 * librdkafka partitioners: `murmur2_random` is Kafka's Java default for keyed messages;
 * `consistent_random`, librdkafka's default, hashes keys with CRC32.
 */
export type Partitioner = 'murmur2_random' | 'consistent_random';

/** A ScheduleCommand as Avro's Python library takes it (unions as plain values, timestamps in epoch ms). */
export type CommandRecord = Record<string, unknown>;

/** Encodes commands in the Confluent wire format with Apache Avro (Python), the schema read from the registry. */
export async function encodeWithPythonAvro(
  subject: string,
  commands: readonly CommandRecord[],
): Promise<Buffer[]> {
  const dir = await mkdtemp(join(tmpdir(), 'tickwork-avro-'));
  try {
    const files = commands.map((_, i) => join(dir, `${i}.avro`));
    const child = execFile(PYTHON, [ENCODER], { timeout: 30_000 });
    const done = new Promise<void>((resolve, reject) => {
      let err = '';
      child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
      child.on('error', (e: NodeJS.ErrnoException) =>
        reject(e.code === 'ENOENT' ? new Error(`${PYTHON} is missing: apt-get install python3-avro`) : e),
      );
      child.on('exit', (code) =>
        code === 0
          ? resolve()
          : reject(new Error(`avro encoder exited ${code} (is python3-avro installed?): ${err}`)),
      );
    });
    child.stdin?.end(
      JSON.stringify({
        registry: STACK.registryUrl,
        subject,
        commands: commands.map((command, i) => ({ file: files[i], command })),
      }),
    );
    await done;
    return await Promise.all(files.map((f) => readFile(f)));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Produces `values` in order, keyed by `key`, with kcat under `partitioner` (idempotent, so
 * librdkafka keeps their order on the partition); resolves once every message is acknowledged.
 */
export async function produceWithKcat(opts: {
  readonly topic: string;
  readonly key: string;
  readonly values: readonly Buffer[];
  readonly partitioner: Partitioner;
}): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'tickwork-kcat-'));
  try {
    const files = opts.values.map((_, i) => join(dir, String(i).padStart(4, '0')));
    await Promise.all(files.map((f, i) => writeFile(f, opts.values[i]!)));
    // Each file is one message (kcat -P with file arguments); -k keys them all.
    await run(
      'kcat',
      [
        '-P',
        '-b',
        STACK.kafkaBrokers,
        '-t',
        opts.topic,
        '-k',
        opts.key,
        '-X',
        `partitioner=${opts.partitioner}`,
        '-X',
        'enable.idempotence=true',
        '-X',
        'acks=all',
        ...files,
      ],
      { timeout: 60_000 },
    ).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT')
        throw new Error('kcat is missing: apt-get install kcat (test/run does, as root)');
      throw e;
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
