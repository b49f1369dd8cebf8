/**
 * The APK bench: a 200 MB package streamed through the real service must leave its memory flat.
 *
 * Starts the service as a child process (filesystem store in a temporary DATA_DIR, then the Azure
 * store against Azurite on loopback), signs in as a superadmin with a viem local account,
 * uploads a generated package (a ZIP header, then pseudo-random bytes, produced as a stream),
 * downloads it several times at once, discarding the bytes, and samples the service's resident
 * memory throughout. "Flat" means the peak stays within APK_FLAT_MB of the idle baseline: far
 * below the package's size, so nothing held it whole. Writes bench/results/apk-latest.{json,md}.
 *
 * Run alone with `tsx bench/apk.ts`, or as part of `npm run bench`. Settings: see bench/options.ts.
 */
import { randomFillSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { Challenge } from '../src/contract/auth.ts';
import { compiledProgram, launchService, ROOT, type LaunchedService } from '../scripts/service-launcher.ts';
import { startAzurite } from '../test/helpers/azurite.ts';
import { benchOptions, type ApkBenchOptions } from './options.ts';
import { RssSampler } from './rss.ts';

const MB = 1024 * 1024;
/** The most the service's memory may grow while streaming the package and still count as flat. */
export const APK_FLAT_MB = 64;
const APK = 'application/vnd.android.package-archive';
const CHUNK = MB;

export interface ApkStoreResult {
  store: 'filesystem' | 'azure';
  status: 'measured' | 'failed' | 'skipped';
  reason?: string;
  sizeMb: number;
  downloads: number;
  uploadSeconds?: number;
  uploadMbPerSec?: number;
  downloadSeconds?: number;
  /** All downloads together. */
  downloadMbPerSec?: number;
  baselineRssMb?: number;
  uploadPeakRssMb?: number;
  downloadPeakRssMb?: number;
  growthMb?: number;
  flat?: boolean;
}

/** The package as a stream: the ZIP magic, then pseudo-random bytes, a chunk at a time. */
function generatedApk(size: number): Readable {
  let sent = 0;
  return new Readable({
    highWaterMark: CHUNK,
    read() {
      if (sent >= size) {
        this.push(null);
        return;
      }
      const chunk = randomFillSync(Buffer.allocUnsafe(Math.min(CHUNK, size - sent)));
      if (sent === 0) chunk.write('PK\x03\x04', 0, 'latin1');
      sent += chunk.length;
      this.push(chunk);
    },
  });
}

export interface Signed {
  cookie: string;
  csrfToken: string;
}

export async function signIn(base: string, account: PrivateKeyAccount): Promise<Signed> {
  const json = { 'content-type': 'application/json' };
  const challenge = await fetch(`${base}/api/auth/challenge`, { method: 'POST', headers: json, body: JSON.stringify({ wallet: account.address }) });
  if (challenge.status !== 200) throw new Error(`challenge answered ${challenge.status}: ${await challenge.text()}`);
  const { nonce, typedData } = (await challenge.json()) as Challenge;
  const { EIP712Domain: _domain, ...types } = typedData.types;
  const signature = await account.signTypedData({ domain: typedData.domain, types, primaryType: typedData.primaryType, message: typedData.message });
  const login = await fetch(`${base}/api/auth/login`, { method: 'POST', headers: json, body: JSON.stringify({ wallet: account.address, nonce, signature }) });
  if (login.status !== 200) throw new Error(`login answered ${login.status}: ${await login.text()}`);
  const cookie = login.headers.getSetCookie().find((c) => c.startsWith('cb_auth_token='));
  if (cookie === undefined) throw new Error('login set no session cookie');
  const body = (await login.json()) as { csrfToken: string; roles: string[] };
  if (!body.roles.includes('superadmin')) throw new Error(`the bench account is not a superadmin (roles ${body.roles.join(', ')})`);
  return { cookie: cookie.split(';')[0]!, csrfToken: body.csrfToken };
}

function send(url: string, method: 'GET' | 'PUT', headers: Record<string, string | number>, body?: Readable): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, resolve);
    req.once('error', reject);
    if (body === undefined) req.end();
    else pipeline(body, req).catch(reject);
  });
}

async function readText(res: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of res) text += String(chunk);
  return text;
}

async function upload(base: string, who: Signed, app: string, size: number): Promise<{ seconds: number; etag: string }> {
  const started = performance.now();
  const res = await send(
    `${base}/api/admin/apk/${app}`,
    'PUT',
    { cookie: who.cookie, 'x-csrf-token': who.csrfToken, 'content-type': APK, 'content-length': size },
    generatedApk(size),
  );
  const text = await readText(res);
  const seconds = (performance.now() - started) / 1000;
  if (res.statusCode !== 200) throw new Error(`upload of ${size} bytes answered ${res.statusCode}: ${text}`);
  const body = JSON.parse(text) as { size: number; etag: string };
  if (body.size !== size) throw new Error(`upload stored ${body.size} bytes, not ${size}`);
  return { seconds, etag: body.etag };
}

/** Downloads the package, counting and discarding the bytes. */
async function download(base: string, who: Signed, app: string, size: number, etag: string): Promise<void> {
  const res = await send(`${base}/api/admin/apk/${app}`, 'GET', { cookie: who.cookie });
  if (res.statusCode !== 200) throw new Error(`download answered ${res.statusCode}: ${await readText(res)}`);
  if (res.headers.etag !== etag) throw new Error(`download ETag ${res.headers.etag} is not the upload's ${etag}`);
  let received = 0;
  for await (const chunk of res) received += (chunk as Buffer).length;
  if (received !== size) throw new Error(`download gave ${received} bytes, not ${size}`);
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Where the bench registers its processes, so Ctrl-C stops them too (run.ts's Cleanup). */
export interface CleanupSteps {
  add(name: string, run: () => unknown): void;
}

async function benchStore(
  opts: ApkBenchOptions,
  store: 'filesystem' | 'azure',
  work: string,
  storageEnv: Record<string, string>,
  cleanup: CleanupSteps | undefined,
): Promise<ApkStoreResult> {
  const size = opts.sizeMb * MB;
  const account = privateKeyToAccount(generatePrivateKey());
  const dataDir = path.join(work, store);
  mkdirSync(dataDir, { recursive: true });
  const service: LaunchedService = await launchService({
    name: `Splitline (${store} store)`,
    program: await compiledProgram(),
    env: {
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      SUPERADMIN_WALLETS: account.address,
      APK_MAX_BYTES: String(size + MB),
      ...storageEnv,
    },
    logFile: path.join(work, `service-${store}.log`),
    ready: { healthPath: '/healthz' },
    timeoutMs: 120_000,
  });
  cleanup?.add(`stop the ${store} APK service`, () => service.stop());
  const rss = new RssSampler(service.pid);
  try {
    const who = await signIn(service.base, account);
    // Warm-up: the first transfer loads code and opens pools; the baseline is taken after it.
    const warm = await upload(service.base, who, 'bench-warmup', 2 * MB);
    await download(service.base, who, 'bench-warmup', 2 * MB, warm.etag);
    rss.start(50);
    await pause(1000);
    const baselineRssMb = rss.nextPhase();

    const up = await upload(service.base, who, 'bench-apk', size);
    const uploadPeakRssMb = rss.nextPhase();
    const started = performance.now();
    await Promise.all(Array.from({ length: opts.downloads }, () => download(service.base, who, 'bench-apk', size, up.etag)));
    const downloadSeconds = (performance.now() - started) / 1000;
    await pause(200);
    const downloadPeakRssMb = rss.nextPhase();
    const growthMb = Math.max(uploadPeakRssMb, downloadPeakRssMb) - baselineRssMb;
    return {
      store,
      status: 'measured',
      sizeMb: opts.sizeMb,
      downloads: opts.downloads,
      uploadSeconds: up.seconds,
      uploadMbPerSec: opts.sizeMb / up.seconds,
      downloadSeconds,
      downloadMbPerSec: (opts.sizeMb * opts.downloads) / downloadSeconds,
      baselineRssMb,
      uploadPeakRssMb,
      downloadPeakRssMb,
      growthMb,
      flat: growthMb < APK_FLAT_MB,
    };
  } catch (err) {
    const reason = `${err instanceof Error ? err.message : String(err)}\n${service.tail(10)}`;
    return { store, status: 'failed', reason, sizeMb: opts.sizeMb, downloads: opts.downloads };
  } finally {
    rss.stop();
    await service.stop();
  }
}

const f1 = (n: number | undefined) => (n ?? 0).toFixed(1);

export function describeResult(r: ApkStoreResult): string {
  if (r.status !== 'measured') return `  ${r.store.padEnd(10)} ${r.status.toUpperCase()}: ${r.reason ?? ''}`;
  return [
    `  ${r.store.padEnd(10)} upload ${r.sizeMb} MB in ${r.uploadSeconds!.toFixed(2)} s = ${f1(r.uploadMbPerSec)} MB/s; ` +
      `${r.downloads} downloads at once in ${r.downloadSeconds!.toFixed(2)} s = ${f1(r.downloadMbPerSec)} MB/s ` +
      `(${f1(r.downloadMbPerSec! / r.downloads)} MB/s each)`,
    `  ${''.padEnd(10)} service RSS: baseline ${f1(r.baselineRssMb)} MB, peak ${f1(r.uploadPeakRssMb)} MB uploading, ` +
      `${f1(r.downloadPeakRssMb)} MB downloading; growth ${f1(r.growthMb)} MB: ${r.flat ? 'PASS' : 'MISS'} (flat = growth < ${APK_FLAT_MB} MB)`,
  ].join('\n');
}

function markdown(results: ApkStoreResult[], generatedAt: string): string {
  const rows = results.map((r) =>
    r.status === 'measured'
      ? `| ${r.store} | ${r.sizeMb} MB | ${f1(r.uploadMbPerSec)} MB/s | ${r.downloads} × ${f1(r.downloadMbPerSec! / r.downloads)} MB/s | ${f1(r.baselineRssMb)} MB | ${f1(Math.max(r.uploadPeakRssMb!, r.downloadPeakRssMb!))} MB | ${f1(r.growthMb)} MB | ${r.flat ? 'PASS' : 'MISS'} |`
      : `| ${r.store} | ${r.sizeMb} MB | ${r.status}: ${(r.reason ?? '').split('\n')[0]} | | | | | |`,
  );
  return [
    `# APK streaming bench (${generatedAt})`,
    '',
    `Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}. Flat = service RSS growth < ${APK_FLAT_MB} MB over the idle baseline.`,
    '',
    '| Store | Package | Upload | Downloads (concurrent) | Baseline RSS | Peak RSS | Growth | Flat |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

/** Runs the APK bench on each store; returns the failures (a store that could not be measured). */
export async function benchApk(opts: ApkBenchOptions, cleanup?: CleanupSteps): Promise<{ results: ApkStoreResult[]; failures: string[] }> {
  console.log(`\nAPK streaming: ${opts.sizeMb} MB package, ${opts.downloads} concurrent downloads, stores: ${opts.stores.join(', ')}`);
  const work = mkdtempSync(path.join(os.tmpdir(), 'splitline-bench-apk-'));
  cleanup?.add('remove the APK bench directory', () => rmSync(work, { recursive: true, force: true }));
  const results: ApkStoreResult[] = [];
  try {
    for (const store of opts.stores) {
      let result: ApkStoreResult;
      if (store === 'azure') {
        const azurite = await startAzurite();
        cleanup?.add('stop Azurite', () => azurite.stop());
        try {
          result = await benchStore(opts, store, work, { STORAGE_CONNECTION_STRING: azurite.connectionString, APK_CONTAINER: 'apks-bench' }, cleanup);
        } finally {
          await azurite.stop();
        }
      } else {
        result = await benchStore(opts, store, work, {}, cleanup);
      }
      console.log(describeResult(result));
      results.push(result);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const generatedAt = new Date().toISOString();
  const dir = path.join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'apk-latest.json'), JSON.stringify({ generatedAt, flatThresholdMb: APK_FLAT_MB, results }, null, 2) + '\n');
  writeFileSync(path.join(dir, 'apk-latest.md'), markdown(results, generatedAt));
  // As for the routes, a MISS is a finding shown above; only a bench that could not run fails.
  const failures = results.flatMap((r) => (r.status === 'failed' ? [`APK ${r.store}: ${(r.reason ?? '').split('\n')[0]}`] : []));
  return { results, failures };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  benchApk(benchOptions().apk).then(
    ({ failures }) => {
      for (const f of failures) console.error(f);
      process.exit(failures.length > 0 ? 1 : 0);
    },
    (err: unknown) => {
      console.error(`APK bench failed: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
