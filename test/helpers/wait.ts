// The one place tests wait for the system and the one place they pause. A test waits on an
// observable condition, through `until`, `waitFor` or `eventually`, never on a fixed sleep; `sleep`
// is for the few tests whose point is time passing.
import { setTimeout as pause } from 'node:timers/promises';

/**
 * Waiting for something the system does in its own time: polls `check` until it holds, failing
 * with what was awaited once `timeoutMs` has passed. An error thrown by `check` fails at once.
 */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string, everyMs = 50): Promise<void> {
  await waitFor(async () => ((await check()) ? true : undefined), timeoutMs, what, everyMs);
}

/**
 * `until` for a value: polls `get` until it returns something other than `undefined` and resolves
 * to that, failing with what was awaited once `timeoutMs` has passed. An error thrown by `get`
 * fails at once.
 */
export async function waitFor<T>(get: () => T | undefined | Promise<T | undefined>, timeoutMs: number, what: string, everyMs = 50): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await get();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await pause(everyMs);
  }
}

/**
 * Retries `attempt` (an assertion, or a read that throws until its target is up) until it stops
 * throwing and resolves to what it returned; once `timeoutMs` has passed, fails with what was
 * awaited and the last error, which is also the cause.
 */
export async function eventually<T>(attempt: () => T | Promise<T>, timeoutMs: number, what: string, everyMs = 50): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (Date.now() > end) {
        const last = err instanceof Error ? err.message : String(err);
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${last}`, { cause: err });
      }
    }
    await pause(everyMs);
  }
}

/**
 * Bounding how long something may take: resolves or rejects as `promise` does, unless `timeoutMs`
 * passes first, when it fails with what was awaited. The promise itself runs on, unawaited.
 */
export async function deadline<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Pacing, never waiting: lets real time pass where that is the point of the test (a client kept
 * deliberately slow, a fixture that answers late, "nothing happens within X"). Each call says why.
 */
export function sleep(ms: number): Promise<void> {
  return pause(ms);
}
