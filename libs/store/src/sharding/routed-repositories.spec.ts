import { HistoryRepository } from '../repositories/history.repository';
import { JobRepository } from '../repositories/job.repository';
import { RunRepository } from '../repositories/run.repository';
import { CalendarRepository } from '../repositories/calendar.repository';
import { ClusterStatsRepository } from '../repositories/cluster-stats.repository';
import { ExecutorLivenessRepository } from '../repositories/executor-liveness.repository';
import {
  EveryDatabaseLivenessRepository,
  RoutedClusterStatsRepository,
  RoutedHistoryRepository,
  RoutedJobRepository,
  RoutedRunRepository,
} from './routed-repositories';
import { RoutedCalendarRepository } from './store-repositories';
import { BackfillRepository } from '../repositories/backfill.repository';
import { BulkRepository } from '../repositories/bulk.repository';
import { RoutedBackfillRepository } from './routed-backfills';
import { InsightRepository } from '../repositories/insight.repository';
import { RoutedInsightRepository } from './routed-insight';
import { bulkCursorOf, parseBulkCursor, RoutedBulkRepository } from './routed-bulk';

/** The public methods a class's prototype defines (not inherited from Object). */
function methodsOf(cls: { prototype: object }): string[] {
  return Object.getOwnPropertyNames(cls.prototype).filter(
    (name) =>
      name !== 'constructor' &&
      typeof Object.getOwnPropertyDescriptor(cls.prototype, name)?.value === 'function',
  );
}

describe('bulk window cursors over several databases', () => {
  it('start at the first database, name the database and the last job done there, and refuse foreign ones', () => {
    expect(parseBulkCursor(null, 2)).toEqual({ database: 0, after: null });
    expect(parseBulkCursor(bulkCursorOf(1, null), 2)).toEqual({ database: 1, after: null });
    // A job id may hold the separator itself.
    expect(parseBulkCursor(bulkCursorOf(0, 'a:b:c'), 2)).toEqual({ database: 0, after: 'a:b:c' });
    for (const foreign of ['job-17', '2:x', '-1:x', ':x', 'x:y'])
      expect(() => parseBulkCursor(foreign, 2)).toThrow(/not a bulk window cursor/);
  });
});

describe('routed repositories', () => {
  // A method left to the base class would read or write the main database only: for a listing,
  // answering as if it were all of them. A new repository method must be routed (or refused) here.
  it.each([
    ['JobRepository', JobRepository, RoutedJobRepository],
    ['HistoryRepository', HistoryRepository, RoutedHistoryRepository],
    ['RunRepository', RunRepository, RoutedRunRepository],
    ['ExecutorLivenessRepository', ExecutorLivenessRepository, EveryDatabaseLivenessRepository],
    ['ClusterStatsRepository', ClusterStatsRepository, RoutedClusterStatsRepository],
    ['CalendarRepository', CalendarRepository, RoutedCalendarRepository],
    ['BackfillRepository', BackfillRepository, RoutedBackfillRepository],
    ['BulkRepository', BulkRepository, RoutedBulkRepository],
    ['InsightRepository', InsightRepository, RoutedInsightRepository],
  ] as const)('override every method of %s', (_name, base, routed) => {
    const own = new Set(methodsOf(routed));
    const missing = methodsOf(base).filter((m) => !own.has(m) && !NOT_ROUTED[_name]!.includes(m));
    expect(missing).toEqual([]);
  });
});

/**
 * Methods that need no routing: private ones (TypeScript keeps them on the prototype; only the
 * base class's own routed callers reach them) and ones that do no I/O.
 */
const NOT_ROUTED: Record<string, readonly string[]> = {
  JobRepository: ['mutateInTransaction'],
  HistoryRepository: [],
  ExecutorLivenessRepository: [],
  ClusterStatsRepository: [],
  CalendarRepository: [],
  BackfillRepository: ['getWith'],
  BulkRepository: [],
  InsightRepository: [],
  RunRepository: ['isUnavailable', 'beginRound', 'findRunStates'],
};
