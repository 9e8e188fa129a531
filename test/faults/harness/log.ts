/** The suite's log: every line carries the time since the suite began and the scenario it belongs to. */
const suiteStart = Date.now();

/** Prints `[mm:ss] [scope] message`. */
export function log(scope: string, message: string): void {
  const s = Math.floor((Date.now() - suiteStart) / 1000);
  const stamp = `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
  console.log(`[${stamp}] [${scope}] ${message}`);
}

/** A logger bound to one scope. */
export type Log = (message: string) => void;

/** A logger that prefixes every line with `scope`. */
export function scoped(scope: string): Log {
  return (message) => log(scope, message);
}
