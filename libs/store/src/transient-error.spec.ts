/** Which database errors the executor retries a ledger write on. */
import { isTransientDatabaseError } from './transient-error';

const pgError = (code: string, severity = 'ERROR', message = 'x') =>
  Object.assign(new Error(message), { code, severity });

describe('isTransientDatabaseError', () => {
  it.each([
    [
      'connection refused',
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    ],
    ['connection reset', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
    [
      'admin shutdown (57P01)',
      pgError('57P01', 'FATAL', 'terminating connection due to administrator command'),
    ],
    ['starting up (57P03)', pgError('57P03', 'FATAL', 'the database system is starting up')],
    ['a connection exception (08006)', pgError('08006')],
    [
      'a database refusing connections (FATAL 55000)',
      pgError('55000', 'FATAL', 'database "x" is not currently accepting connections'),
    ],
    ['too many connections (53300)', pgError('53300', 'FATAL')],
    ['a statement timeout (57014)', pgError('57014')],
    ['a deadlock (40P01)', pgError('40P01')],
    ['a connection ended under a query', new Error('Connection terminated unexpectedly')],
    ['a pool connect timeout', new Error('timeout exceeded when trying to connect')],
    [
      'every address refused',
      new AggregateError([
        Object.assign(new Error('a'), { code: 'ECONNREFUSED' }),
        Object.assign(new Error('b'), { code: 'ECONNREFUSED' }),
      ]),
    ],
  ])('%s is transient', (_what, e) => expect(isTransientDatabaseError(e)).toBe(true));

  it.each([
    [
      'a unique violation (23505)',
      pgError('23505', 'ERROR', 'duplicate key value violates unique constraint'),
    ],
    ['a syntax error (42601)', pgError('42601', 'ERROR', 'syntax error at or near "SELEC"')],
    ['an invalid uuid (22P02)', pgError('22P02')],
    ['a pool that was ended', new Error('Cannot use a pool after calling end on the pool')],
    [
      'a host that does not resolve',
      Object.assign(new Error('getaddrinfo ENOTFOUND db'), { code: 'ENOTFOUND' }),
    ],
    ['not an error', 'ECONNREFUSED'],
    ['nothing', undefined],
  ])('%s is not', (_what, e) => expect(isTransientDatabaseError(e)).toBe(false));
});
