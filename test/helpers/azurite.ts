/** Starts Azurite's blob service from the npm package on a free loopback port, in memory. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../scripts/service-launcher.ts';

// Azurite's well-known development account: public, documented, and valid only for the emulator.
const ACCOUNT = 'devstoreaccount1';
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface Azurite {
  connectionString: string;
  stop(): Promise<void>;
}

export async function startAzurite(): Promise<Azurite> {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  const bin = path.join(root, 'node_modules/.bin/azurite-blob');
  const port = await freePort();
  const child: ChildProcess = spawn(
    bin,
    ['--blobHost', '127.0.0.1', '--blobPort', String(port), '--inMemoryPersistence', '--silent', '--disableTelemetry', '--skipApiVersionCheck'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`Azurite did not start: ${out}`)), 30_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.includes('successfully listens')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`Azurite exited with ${code}: ${out}`));
    });
  });
  return {
    connectionString: `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${KEY};BlobEndpoint=http://127.0.0.1:${port}/${ACCOUNT};`,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}
