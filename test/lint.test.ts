/**
 * The whole tree passes the linter (eslint.config.js: typescript-eslint's recommended rules with
 * type information, the HTTP boundary and the layers of src, whose refusals test/unit/layers.test.ts
 * checks): no error and no warning. Run as a process (`npm run lint` does the same), so
 * it sits in the system tier; type-aware linting of every file takes minutes on a small machine.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');
const SHOWN = 30;

interface LintMessage {
  ruleId: string | null;
  severity: number;
  message: string;
  line?: number;
}
interface LintResult {
  filePath: string;
  messages: LintMessage[];
}

function runEslint(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(ROOT, 'node_modules', '.bin', 'eslint'), ['.', '--format', 'json'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** packages/sdk/src/openapi.ts, which the SDK's code is typed by: generated, never committed (scripts/sdk-types.ts). */
function generateSdkTypes(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts', 'sdk-types.ts')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`scripts/sdk-types.ts exited ${String(code)}: ${stderr.slice(0, 2000)}`))));
  });
}

test('eslint finds no error and no warning anywhere in the tree', { timeout: 600_000 }, async () => {
  await generateSdkTypes();
  const { code, stdout, stderr } = await runEslint();
  // 0: clean; 1: problems found (listed below). Anything else is eslint itself failing.
  assert.ok(code === 0 || code === 1, `eslint exited ${String(code)}: ${stderr.slice(0, 2000)}`);
  const results = JSON.parse(stdout) as LintResult[];
  const problems = results.flatMap((r) =>
    r.messages.map((m) => `${path.relative(ROOT, r.filePath)}:${m.line ?? 0} ${m.ruleId ?? '(no rule)'} ${m.severity === 2 ? 'error' : 'warning'}: ${m.message}`),
  );
  const shown = problems.slice(0, SHOWN).join('\n');
  const more = problems.length > SHOWN ? `\n... and ${problems.length - SHOWN} more (npm run lint lists them all)` : '';
  assert.equal(problems.length, 0, `${problems.length} lint problem(s):\n${shown}${more}`);
  assert.equal(code, 0, `eslint exited ${String(code)} with no problem listed: ${stderr.slice(0, 2000)}`);
});
