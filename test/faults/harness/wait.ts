/** Bounded waits: on a condition (polled), or until an instant. No unbounded sleeps anywhere. */

/** Resolves after `ms` (used only where the scenario itself is "down for N seconds"). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/** Resolves at the wall-clock instant `at` (epoch ms). */
export function until(at: number): Promise<void> {
  return sleep(at - Date.now());
}

/**
 * Polls `check` every `everyMs` until it returns a value other than undefined; rejects after
 * `timeoutMs` naming `what` and the last error `check` threw.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() >= deadline) break;
    await sleep(Math.min(everyMs, deadline - Date.now()));
  }
  const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
}

/** Like waitFor, but resolves to undefined instead of rejecting on the timeout. */
export async function waitUpTo<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  everyMs = 100,
): Promise<T | undefined> {
  return waitFor('', check, timeoutMs, everyMs).catch(() => undefined);
}
