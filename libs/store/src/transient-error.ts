/**
 * Which database errors say "the server or the connection went away, try again" rather than
 * "this statement is wrong": the executor retries its ledger writes on the first kind only.
 */

/** Socket errors of a connection that could not be made or was cut. */
const SOCKET_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs of a server that is restarting, shutting down, overloaded or that cut the session:
 * admin/crash shutdown, cannot connect now (starting up, in recovery), too many connections,
 * a statement cancelled by its timeout, serialization failure and deadlock.
 */
const TRANSIENT_STATES = new Set(['57P01', '57P02', '57P03', '53300', '57014', '40001', '40P01']);

/** What node-postgres says when a connection ends under a query or cannot be opened in time. */
const CLIENT_MESSAGES =
  /Connection terminated|connection error|timeout exceeded when trying to connect|terminating connection|server closed the connection|Client has encountered a connection error/i;

/**
 * True for an error that a retry of the same statement may not meet: the connection was refused,
 * reset or ended (class 08, 57P01-57P03, a FATAL or PANIC from the server: the session is gone,
 * nothing was wrong with the statement), or the server is overloaded. False for everything else,
 * a constraint violation or a syntax error included.
 */
export function isTransientDatabaseError(e: unknown): boolean {
  if (typeof e !== 'object' || e === null) return false;
  const err = e as { code?: unknown; severity?: unknown; message?: unknown; errors?: unknown };
  const code = typeof err.code === 'string' ? err.code : undefined;
  if (code !== undefined) {
    if (SOCKET_ERRORS.has(code) || TRANSIENT_STATES.has(code) || code.startsWith('08')) return true;
    // A server-side FATAL or PANIC ends the session (e.g. "database is not accepting connections"
    // while it is being restarted or fenced off): the statement was fine.
    if (err.severity === 'FATAL' || err.severity === 'PANIC') return true;
    if (/^[0-9A-Z]{5}$/.test(code)) return false;
  }
  // Node wraps several failed connection attempts (one per resolved address) in an AggregateError.
  if (Array.isArray(err.errors) && err.errors.length > 0) return err.errors.every(isTransientDatabaseError);
  return typeof err.message === 'string' && CLIENT_MESSAGES.test(err.message);
}
