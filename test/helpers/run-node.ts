/**
 * Runs a node entry point (the compiled CLI, or sources through tsx) to its exit, collecting its
 * output. A process that does not exit within `timeoutMs` (an open database, a stuck wait) is
 * killed and fails the test with what it printed.
 */
import { spawn } from 'node:child_process';
import { ROOT } from '../../scripts/service-launcher.ts';

export interface NodeRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runNode(argv: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<NodeRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { cwd: ROOT, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${argv.join(' ')} did not exit within ${timeoutMs / 1000} s\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
