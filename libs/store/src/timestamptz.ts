/**
 * timestamptz text → Date, for the form PostgreSQL sends with DateStyle ISO
 * (`2026-12-01 13:15:08.543352+00`, zone `±HH[:MM[:SS]]`), read digit by digit. pg's own parser
 * (postgres-date) runs three regular expressions per value: ~3% of a scheduler's CPU, which reads
 * two timestamps per claimed job. Anything else (infinity, BC, years before 1000 or after 9999)
 * goes to pg's parser.
 */

const ZERO = 48;

/** The value of `len` decimal digits at `at`, or -1 if one of them is not a digit. */
function digits(s: string, at: number, len: number): number {
  let v = 0;
  for (let i = at; i < at + len; i++) {
    const d = s.charCodeAt(i) - ZERO; // NaN past the end
    if (!(d >= 0 && d <= 9)) return -1;
    v = v * 10 + d;
  }
  return v;
}

/** Parses `s` as PostgreSQL's ISO timestamptz output; `fallback` parses anything else. */
export function parseTimestamptz<T>(s: string, fallback: (s: string) => T): Date | T {
  const n = s.length;
  // YYYY-MM-DD HH:MM:SS is 19 characters, and a zone at least 3 more.
  if (
    n < 22 ||
    s.charCodeAt(4) !== 45 ||
    s.charCodeAt(7) !== 45 ||
    s.charCodeAt(10) !== 32 ||
    s.charCodeAt(13) !== 58 ||
    s.charCodeAt(16) !== 58
  )
    return fallback(s);
  const year = digits(s, 0, 4);
  const month = digits(s, 5, 2);
  const day = digits(s, 8, 2);
  const hour = digits(s, 11, 2);
  const minute = digits(s, 14, 2);
  const second = digits(s, 17, 2);
  if (year < 1000 || month < 1 || day < 1 || hour < 0 || minute < 0 || second < 0) return fallback(s);
  let i = 19;
  let ms = 0;
  if (s.charCodeAt(i) === 46) {
    // Fractional seconds: milliseconds are kept, finer digits dropped (as Date.UTC truncates).
    i++;
    let scale = 100;
    while (i < n) {
      const d = s.charCodeAt(i) - ZERO;
      if (!(d >= 0 && d <= 9)) break;
      ms += d * scale;
      scale = scale > 1 ? scale / 10 : 0;
      i++;
    }
  }
  const sign = s.charCodeAt(i);
  if (sign !== 43 && sign !== 45) return fallback(s);
  const zoneHours = digits(s, i + 1, 2);
  let zoneMinutes = 0;
  let zoneSeconds = 0;
  i += 3;
  if (i < n && s.charCodeAt(i) === 58) {
    zoneMinutes = digits(s, i + 1, 2);
    i += 3;
    if (i < n && s.charCodeAt(i) === 58) {
      zoneSeconds = digits(s, i + 1, 2);
      i += 3;
    }
  }
  if (i !== n || zoneHours < 0 || zoneMinutes < 0 || zoneSeconds < 0) return fallback(s);
  const offset = zoneHours * 3600 + zoneMinutes * 60 + zoneSeconds;
  const utc = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  return new Date(utc - (sign === 43 ? 1 : -1) * offset * 1000);
}
