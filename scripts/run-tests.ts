/**
 * Runs the *.test.ts files under test/ and src/ with node's own test runner (through tsx), so the
 * closing summary is node's. Three tiers, chosen with --tier (repeatable; all three by default):
 *   unit    test/unit/ and tests beside the sources: pure code, no database server, no process;
 *   system  files that start something of their own: the service as a process, the dev chain, a
 *           browser, a private PostgreSQL cluster (they import one of SYSTEM_HELPERS);
 *   api     the rest: the app in-process (Fastify inject or a local listener) on a database.
 * Other arguments narrow the run to files whose path contains one of them.
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
const filters = args.filter((a) => !a.startsWith('--tier='));
const files = ['test', 'src']
  .flatMap((d) => find(d))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .filter((f) => tiers.length === 0 || tiers.includes(tierOf(f, readFileSync(f, 'utf8'))))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const child = spawn(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=600000', ...files],
  { stdio: 'inherit' },
);
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
