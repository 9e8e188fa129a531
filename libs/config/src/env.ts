/** Readers for environment variables that record every bad variable by name. */

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** Reads typed values out of an env map, collecting problems instead of throwing on the first. */
export class EnvReader {
  readonly problems: string[] = [];

  constructor(private readonly env: Readonly<Record<string, string | undefined>>) {}

  private raw(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  string(name: string, fallback: string): string {
    return this.raw(name) ?? fallback;
  }

  optionalString(name: string): string | undefined {
    return this.raw(name);
  }

  int(name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!/^-?\d+$/.test(v) || !Number.isSafeInteger(n) || n < min || n > max) {
      this.problems.push(`${name}=${JSON.stringify(v)} must be an integer between ${min} and ${max}`);
      return fallback;
    }
    return n;
  }

  bool(name: string, fallback: boolean): boolean {
    const v = this.raw(name)?.toLowerCase();
    if (v === undefined) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(v)) return true;
    if (['0', 'false', 'no', 'off'].includes(v)) return false;
    this.problems.push(`${name}=${JSON.stringify(v)} must be true or false`);
    return fallback;
  }

  url(name: string, fallback: string, protocols: readonly string[]): string {
    const v = this.raw(name) ?? fallback;
    try {
      const u = new URL(v);
      if (!protocols.includes(u.protocol)) throw new Error('protocol');
      return v;
    } catch {
      this.problems.push(`${name}=${JSON.stringify(v)} must be a URL with scheme ${protocols.join(' or ')}`);
      return fallback;
    }
  }

  list(name: string, fallback: readonly string[]): string[] {
    const v = this.raw(name);
    if (v === undefined) return [...fallback];
    return v
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0);
  }

  /** Durations like `500ms`, `5s`, `1m`, `2h`, or a bare number of milliseconds. */
  durationList(name: string, fallback: readonly string[]): { label: string; ms: number }[] {
    const out: { label: string; ms: number }[] = [];
    for (const label of this.list(name, fallback)) {
      const ms = parseDuration(label);
      if (ms === undefined || ms <= 0) {
        this.problems.push(
          `${name} has ${JSON.stringify(label)}: each entry must be a duration like 5s, 1m, 10m`,
        );
        continue;
      }
      out.push({ label, ms });
    }
    return out;
  }

  problem(message: string): void {
    this.problems.push(message);
  }
}

/** Parses `250ms`, `5s`, `1m`, `2h`, `1d` or a bare number of milliseconds. */
export function parseDuration(raw: string): number | undefined {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(raw.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = m[2] ?? 'ms';
  const factor = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[unit];
  return factor === undefined ? undefined : n * factor;
}
