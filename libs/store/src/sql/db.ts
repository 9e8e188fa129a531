/** What a statement module runs on: the pool (a statement of its own) or a transaction's client. */
import type { Pool, PoolClient } from 'pg';

export type Db = Pool | PoolClient;

/**
 * An error of one row's data (SQLSTATE class 22: a value out of range, an invalid datetime …;
 * class 23: a constraint the row breaks): another group of jobs may well succeed.
 */
export function isRowDataError(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}
