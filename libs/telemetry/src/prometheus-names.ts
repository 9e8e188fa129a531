/**
 * Prometheus names with unit suffixes, as OpenTelemetry's Prometheus compatibility rules say (and
 * as the other languages' exporters do; the JavaScript exporter does not): an instrument's unit is
 * appended to its name unless the name ends with it already (`http.server.request.duration`, unit
 * `s` → `http_server_request_duration_seconds`; `v8js.memory.heap.used`, `By` →
 * `v8js_memory_heap_used_bytes`); a gauge of unit `1` gets `_ratio`. Counters then get `_total`
 * from the exporter, after the unit.
 */

const UNIT_WORDS: Readonly<Record<string, string>> = {
  d: 'days',
  h: 'hours',
  min: 'minutes',
  s: 'seconds',
  ms: 'milliseconds',
  us: 'microseconds',
  ns: 'nanoseconds',
  By: 'bytes',
  KiBy: 'kibibytes',
  MiBy: 'mebibytes',
  GiBy: 'gibibytes',
  KBy: 'kilobytes',
  MBy: 'megabytes',
  GBy: 'gigabytes',
  bit: 'bits',
  '%': 'percent',
  Cel: 'celsius',
  Hz: 'hertz',
  V: 'volts',
  W: 'watts',
  A: 'amperes',
  J: 'joules',
  m: 'meters',
};

const sanitize = (s: string): string =>
  s
    .replace(/[^a-zA-Z0-9_:]/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_|_$/g, '');

/** The name suffix for a UCUM unit ('' for none, `{annotations}` only, or unit `1` on a non-gauge). */
export function unitSuffix(unit: string | undefined, gauge: boolean): string {
  const u = (unit ?? '').replace(/\{[^}]*\}/g, '').trim();
  if (u === '') return '';
  if (u === '1') return gauge ? 'ratio' : '';
  const [num, per] = u.split('/', 2) as [string, string | undefined];
  const word = (x: string) => UNIT_WORDS[x] ?? sanitize(x);
  const perWord =
    per === undefined
      ? ''
      : per === 'd'
        ? 'day'
        : per === 'h'
          ? 'hour'
          : per === 'min'
            ? 'minute'
            : per === 's'
              ? 'second'
              : word(per);
  return sanitize([num === '' ? '' : word(num), perWord ? `per_${perWord}` : ''].filter(Boolean).join('_'));
}

/** `name` (an OpenTelemetry name) as Prometheus shows it, before the exporter's `_total` on counters. */
export function withUnitSuffix(name: string, unit: string | undefined, gauge: boolean): string {
  const base = sanitize(name);
  const suffix = unitSuffix(unit, gauge);
  if (suffix === '' || base === suffix || base.endsWith(`_${suffix}`)) return base;
  return `${base}_${suffix}`;
}
