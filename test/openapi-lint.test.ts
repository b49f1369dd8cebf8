/**
 * The OpenAPI document the app serves passes Redocly's recommended rules (redocly.yaml) with no
 * error and no warning. The CLI is a devDependency run offline from node_modules: no telemetry,
 * no update check, nothing downloaded.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { test } from 'node:test';
import { startTestApp } from './helpers/app.ts';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(path.dirname(fileURLToPath(import.meta.resolve('@redocly/cli/package.json'))), 'bin', 'cli.js');

interface Problem {
  ruleId: string;
  severity: string;
  message: string;
  location: { pointer?: string }[];
}

test('redocly lint (recommended rules) finds no problem in /openapi.json', async () => {
  const t = await startTestApp();
  const dir = mkdtempSync(path.join(tmpdir(), 'splitline-openapi-'));
  try {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200);
    const file = path.join(dir, 'openapi.json');
    writeFileSync(file, res.body);
    // Exit code 1 means problems were found; the JSON report says which, so read it either way.
    const out = await run(process.execPath, [cli, 'lint', file, '--config', path.join(root, 'redocly.yaml'), '--format=json'], {
      // The CLI reads a .env from its working directory: give it one with none.
      cwd: dir,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
      maxBuffer: 64 * 1024 * 1024,
    }).catch((err: { stdout?: string; stderr?: string; code?: number }) => {
      if (typeof err.stdout !== 'string' || err.stdout === '') throw err;
      return { stdout: err.stdout, stderr: err.stderr ?? '' };
    });
    const report = JSON.parse(out.stdout) as { totals: { errors: number; warnings: number }; problems: Problem[] };
    const lines = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? '?'}: ${p.message}`);
    assert.deepEqual(lines, [], `redocly lint found problems:\n${lines.join('\n')}`);
    assert.equal(report.totals.errors + report.totals.warnings, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await t.close();
  }
});
