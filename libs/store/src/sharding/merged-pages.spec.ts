import { mergeJobPages, mergeSortedPages, type JobListPart } from './merged-pages';

type J = { jobId: string };
const jobs = (...ids: string[]): J[] => ids.map((jobId) => ({ jobId }));

/** One database's listJobs as the repository answers it: a scan window, a filter, a limit, a byte cut. */
function listOne(
  ids: readonly string[],
  q: { after?: string; limit: number; maxScan: number; match: (id: string) => boolean; cutAfter?: number },
): JobListPart<J> {
  const window = [...ids].sort().filter((id) => q.after === undefined || id > q.after);
  const scanned = window.slice(0, q.maxScan);
  let page = scanned.filter(q.match).slice(0, q.limit);
  const cut = q.cutAfter !== undefined && page.length > q.cutAfter;
  if (cut) page = page.slice(0, q.cutAfter);
  return {
    jobs: jobs(...page),
    cut,
    scannedTo: scanned.length >= q.maxScan ? scanned[scanned.length - 1]! : null,
  };
}

/** JobService.listJobs's use of the answer: its page and the position of the next one. */
function servicePage(merged: JobListPart<J>, limit: number): { page: string[]; next?: string } {
  const page = merged.jobs.slice(0, limit);
  const last = page[page.length - 1];
  const next =
    (merged.jobs.length > limit || merged.cut) && last
      ? last.jobId
      : merged.scannedTo !== null
        ? merged.scannedTo
        : undefined;
  return { page: page.map((j) => j.jobId), ...(next !== undefined ? { next } : {}) };
}

describe('mergeJobPages', () => {
  it('keeps only what every database has covered, so the next page skips nothing', () => {
    // Database A filled its page up to a-3; B's page went on to b-9: B's jobs past a-3 wait.
    const merged = mergeJobPages(
      [
        { jobs: jobs('a-1', 'a-2', 'a-3'), cut: false, scannedTo: null },
        { jobs: jobs('a-15', 'b-9'), cut: false, scannedTo: null },
      ],
      3,
    );
    expect(merged.jobs.map((j) => j.jobId)).toEqual(['a-1', 'a-15', 'a-2']);
    expect(merged.scannedTo).toBeNull();
  });

  it('goes on after the lowest used-up scan window when the page is short', () => {
    const merged = mergeJobPages(
      [
        { jobs: jobs('c'), cut: false, scannedTo: 'm' },
        { jobs: jobs('d', 'x'), cut: false, scannedTo: null },
      ],
      5,
    );
    expect(merged.jobs.map((j) => j.jobId)).toEqual(['c', 'd']);
    expect(merged.scannedTo).toBe('m');
  });

  it('ends when no database was cut short', () => {
    const merged = mergeJobPages(
      [
        { jobs: jobs('b'), cut: false, scannedTo: null },
        { jobs: jobs('a'), cut: false, scannedTo: null },
      ],
      5,
    );
    expect(merged).toEqual({ jobs: jobs('a', 'b'), cut: false, scannedTo: null });
  });

  it('treats a page cut for bytes as covered up to its last job', () => {
    const merged = mergeJobPages(
      [
        { jobs: jobs('a', 'c'), cut: true, scannedTo: null },
        { jobs: jobs('b', 'd'), cut: false, scannedTo: null },
      ],
      5,
    );
    expect(merged.jobs.map((j) => j.jobId)).toEqual(['a', 'b', 'c']);
    expect(merged.scannedTo).toBe('c');
  });

  it('pages through three databases returning every job once, in order, with jobs created between pages', () => {
    let seed = 7;
    const random = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
    const id = () =>
      `job-${Math.floor(random() * 1e6)
        .toString()
        .padStart(6, '0')}`;
    const dbs: string[][] = [[], [], []];
    const initial = new Set<string>();
    for (let i = 0; i < 300; i++) {
      const j = id();
      if (initial.has(j)) continue;
      initial.add(j);
      dbs[i % 3]!.push(j);
    }
    const match = (j: string) => Number(j.slice(-1)) % 3 !== 0;
    for (const pageSize of [1, 2, 7, 50]) {
      const seen: string[] = [];
      let after: string | undefined;
      for (let pages = 0; pages < 10_000; pages++) {
        const parts = dbs.map((ids, d) =>
          listOne(ids, {
            after,
            limit: pageSize + 1,
            maxScan: 5 + d * 3,
            match,
            cutAfter: d === 1 ? 3 : undefined,
          }),
        );
        const { page, next } = servicePage(mergeJobPages(parts, pageSize + 1), pageSize);
        seen.push(...page);
        // Jobs created meanwhile, before and after the position: those after it may show, none twice.
        dbs[pages % 3]!.push(id());
        if (next === undefined) break;
        after = next;
      }
      expect(seen).toEqual([...seen].sort());
      expect(new Set(seen).size).toBe(seen.length);
      for (const j of [...initial].filter(match)) expect(seen).toContain(j);
    }
  });
});

describe('mergeSortedPages', () => {
  it('takes the first entries of all databases by the sort key (newest first)', () => {
    const newestFirst = (a: number, b: number) => b - a;
    expect(mergeSortedPages([[9, 5, 1], [8, 7, 6], []], 4, newestFirst)).toEqual([9, 8, 7, 6]);
  });
});
