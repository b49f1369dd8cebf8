/**
 * Runs the *.test.ts files under test/ and src/ with node's own test runner (through tsx), so the
 * closing summary is node's. Three tiers, chosen with --tier (repeatable; all three by default):
 *   unit    test/unit/ and tests beside the sources: pure code, no database server, no process;
 *   system  files that start something of their own: the service as a process, the dev chain, a
 *           browser, a private PostgreSQL cluster (they import one of SYSTEM_HELPERS);
 *   api     the rest: the app in-process (Fastify inject or a local listener) on a database.
 * Other arguments narrow the run to files whose path contains one of them; --except=<word>
 * (repeatable) leaves out the files whose path contains it. The chain simulation's files run after
 * the rest, one at a time (ALONE); the run then ends with a line counting both: `N passed, N failed`.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

export type Tier = 'unit' | 'api' | 'system';
const TIERS: readonly Tier[] = ['unit', 'api', 'system'];

/** What a system test imports to start a process, a chain, a browser or a cluster of its own. */
const SYSTEM_HELPERS = [/helpers\/service\.ts'/, /helpers\/private-postgres\.ts'/, /browser\/harness\.ts'|\.\/harness\.ts'/, /chain\/helpers\.ts'|\.\/helpers\.ts'/, /'node:child_process'/];

function find(dir: string): string[] {
  let out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out = out.concat(find(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

export function tierOf(file: string, source: string): Tier {
  if (file.startsWith(`test${path.sep}unit${path.sep}`) || file.startsWith(`src${path.sep}`)) return 'unit';
  return SYSTEM_HELPERS.some((re) => re.test(source)) ? 'system' : 'api';
}

const args = process.argv.slice(2);
const tiers = args.filter((a) => a.startsWith('--tier=')).map((a) => a.slice('--tier='.length));
for (const t of tiers) {
  if (!TIERS.includes(t as Tier)) {
    console.error(`unknown tier ${t}; tiers: ${TIERS.join(', ')}`);
    process.exit(1);
  }
}
const excepts = args.filter((a) => a.startsWith('--except=')).map((a) => a.slice('--except='.length));
const filters = args.filter((a) => !a.startsWith('--tier=') && !a.startsWith('--except='));
const files = ['test', 'src']
  .flatMap((d) => find(d))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .filter((f) => !excepts.some((x) => f.includes(x)))
  .filter((f) => tiers.length === 0 || tiers.includes(tierOf(f, readFileSync(f, 'utf8'))))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
// Files that time a chain's blocks (the mainnet-shaped simulation) run after the others, one at a
// time: how long a payment waits on 2-second blocks is what they measure, and another file's load
// on this machine would be measured with it.
const ALONE = [`test${path.sep}sim${path.sep}`];
const alone = files.filter((f) => ALONE.some((x) => f.startsWith(x)));
const together = files.filter((f) => !alone.includes(f));

const SUMMARY = /^(?:#|ℹ) (tests|pass|fail|cancelled|skipped|todo) (\d+)\s*$/;

/** Runs node's test runner on `group`; resolves with its exit code and the counts of its closing summary. */
function run(group: string[], concurrency: number): Promise<{ code: number; counts: Record<string, number> }> {
  return new Promise((resolve) => {
    const reporter = process.stdout.isTTY ? ['--test-reporter=spec'] : [];
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-timeout=600000', ...reporter, ...group],
      { stdio: ['inherit', 'pipe', 'inherit'] },
    );
    const counts: Record<string, number> = {};
    let rest = '';
    child.stdout.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      const lines = (rest + chunk.toString('utf8')).split('\n');
      rest = lines.pop()!;
      for (const line of lines) {
        // The reporter's colour codes (ESC [ … m) stand between a count's name and its number.
        // eslint-disable-next-line no-control-regex -- the escape character is what is matched
        const m = SUMMARY.exec(line.replace(/\x1b\[[0-9;]*m/g, ''));
        if (m) counts[m[1]!] = Number(m[2]);
      }
    });
    child.on('exit', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), counts }));
  });
}

const phases: [string[], number][] = [
  [together, 2],
  [alone, 1],
];
const totals: Record<string, number> = {};
let failed = false;
for (const [group, concurrency] of phases) {
  if (group.length === 0) continue;
  const { code, counts } = await run(group, concurrency);
  if (code !== 0) failed = true;
  for (const [k, n] of Object.entries(counts)) totals[k] = (totals[k] ?? 0) + n;
}
if (together.length > 0 && alone.length > 0) {
  // Two runs of node's runner: the closing line counts both.
  console.log(`\nall ${together.length + alone.length} files: ${totals.tests ?? 0} tests, ${totals.skipped ?? 0} skipped, ${totals.cancelled ?? 0} cancelled`);
  console.log(`${totals.pass ?? 0} passed, ${(totals.fail ?? 0) + (totals.cancelled ?? 0)} failed`);
}
process.exit(failed ? 1 : 0);
