/**
 * Waiting for something the system does in its own time: polls `check` until it holds, failing
 * with what was awaited once `timeoutMs` has passed. Never a fixed sleep standing in for a wait.
 */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string, everyMs = 50): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
