/**
 * Pages of a cross-shard listing, merged from one page per database. Pure: no I/O.
 *
 * Every listing pages by keyset on its sort key, and each database is asked for the page after the
 * same position. A database has then *covered* the key range up to some frontier (everything it
 * holds that matches, up to there, is in its page); the merged page is what lies within the lowest
 * frontier of all, so the next page, starting after the merged page's end, neither skips nor
 * repeats an entry, whatever was created meanwhile.
 */

/** One database's answer to a job listing (JobRepository.listJobs). */
export interface JobListPart<J extends { readonly jobId: string }> {
  readonly jobs: readonly J[];
  /** Jobs within the limit were left out for their bytes. */
  readonly cut: boolean;
  /** The last job id of a filter window that was used up (the page may be short while more follow). */
  readonly scannedTo: string | null;
}

/**
 * Merges per-database job pages (ascending job_id, each asked for `limit` after one position) into
 * one answer of the same shape. `scannedTo` of the result is the frontier up to which every
 * database was covered, when that is not the end: the caller's next page goes on after it.
 */
export function mergeJobPages<J extends { readonly jobId: string }>(
  parts: readonly JobListPart<J>[],
  limit: number,
): { jobs: J[]; cut: boolean; scannedTo: string | null } {
  // A database's frontier: the end (null) when it was not cut short, its last job when it filled
  // its page or was cut for bytes, the end of its scan window when that was used up.
  let frontier: string | null = null;
  const lower = (a: string | null, b: string): string => (a === null || b < a ? b : a);
  for (const p of parts) {
    const last = p.jobs[p.jobs.length - 1];
    if ((p.jobs.length >= limit || p.cut) && last) frontier = lower(frontier, last.jobId);
    else if (p.scannedTo !== null) frontier = lower(frontier, p.scannedTo);
  }
  const covered = parts
    .flatMap((p) => p.jobs)
    .filter((j) => frontier === null || j.jobId <= frontier)
    .sort((a, b) => (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0));
  const jobs = covered.slice(0, limit);
  // A full page says "more after its last job" by itself; a short one by the frontier.
  return { jobs, cut: false, scannedTo: jobs.length >= limit ? null : frontier };
}

/**
 * Merges per-database pages sorted by `compare` (each the first `limit` entries after one
 * position) into the first `limit` entries of all: exact, since no database can have an entry
 * that belongs before another's last one without it being in its own first `limit`.
 */
export function mergeSortedPages<T>(
  parts: readonly (readonly T[])[],
  limit: number,
  compare: (a: T, b: T) => number,
): T[] {
  return parts.flat().sort(compare).slice(0, limit);
}
