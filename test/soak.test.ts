/**
 * The soak (scripts/soak.ts, `npm run soak`) in a short version for CI: 45 s of the same mixed load
 * against a real server process, payments on the dev chain included. It must end with no failed
 * request, every payment completed, a clean shutdown, and no gross memory growth.
 *
 * The growth limits here are lenient on purpose: in 45 s the server is still warming up (JIT,
 * PGlite's WebAssembly memory and caches filling), so a short run cannot tell a slow leak from
 * warm-up; it catches only gross growth. The 10-minute `npm run soak` judges the trend with tight
 * limits (docs/reliability.md has the figures).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { after, describe, test } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');
let child: ChildProcess | undefined;

after(() => {
  if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
});

describe('soak, short version', { timeout: 240_000 }, () => {
  test('45 s of mixed load: no errors, every payment completed, no gross memory growth', async () => {
    child = spawn(process.execPath, ['--import', 'tsx', 'scripts/soak.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        SOAK_SECONDS: process.env.SOAK_SECONDS ?? '45',
        SOAK_WARMUP_SECONDS: '20',
        SOAK_REPORT_SECONDS: '15',
        SOAK_MAX_RSS_SLOPE: '60',
        SOAK_MAX_HEAP_SLOPE: '60',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.stderr!.setEncoding('utf8').on('data', (c: string) => (output += c));
    const code = await new Promise<number | null>((resolve) => child!.once('exit', (c) => resolve(c)));
    const line = output.split('\n').find((l) => l.startsWith('SOAK_RESULT '));
    assert.ok(line !== undefined, `the soak printed its result:\n${output.slice(-4000)}`);
    const result = JSON.parse(line.slice('SOAK_RESULT '.length)) as {
      errors: number;
      requests: number;
      payments: { submitted: number; completed: number };
      rss: { slopeMbPerMin: number };
      liveHeap: { slopeMbPerMin: number };
      shutdown: { exitCode: number | null };
      problems: string[];
    };
    console.log(output.split('\n').filter((l) => l.startsWith('  ') || l.startsWith('[')).join('\n'));
    assert.equal(result.errors, 0, output.slice(-4000));
    assert.ok(result.requests > 500, `a real load ran: ${result.requests} requests`);
    assert.ok(result.payments.submitted > 0 && result.payments.completed === result.payments.submitted, 'every payment completed');
    assert.equal(result.shutdown.exitCode, 0);
    assert.deepEqual(result.problems, []);
    assert.equal(code, 0);
  });
});
