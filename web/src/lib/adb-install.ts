/**
 * Installs a brand's signed APK on an Android device over ADB: authorise the connection, push the
 * package into /data/local/tmp while it is still downloading, run `pm install -r`, then remove the
 * temporary file. The device comes in as an ADB daemon connection (WebUSB in the browser, a
 * scripted daemon in the tests), so the same code runs against both.
 */
import { Adb, AdbDaemonTransport, type AdbCredentialStore, type AdbDaemonConnection } from '@yume-chan/adb';
import { ReadableStream } from '@yume-chan/stream-extra';

/** A brand key, as the APK route accepts it; it is also the temporary file's name on the device. */
export const APP_NAME = /^[a-z0-9-]{1,64}$/;
/** rw-r--r--: the package manager reads the file as another user. */
export const PUSH_PERMISSION = 0o644;
/** How long the person has to answer the device's "Allow USB debugging?" prompt. */
export const DEFAULT_AUTHORISE_TIMEOUT_MS = 60_000;

export function devicePath(app: string): string {
  if (!APP_NAME.test(app)) throw new TypeError(`"${app}" is not a brand key ([a-z0-9-]{1,64})`);
  return `/data/local/tmp/${app}.apk`;
}

/** The device did not let this browser in: the prompt was refused, ignored, or the device hung up. */
export class AdbAuthorisationError extends Error {
  constructor(
    readonly reason: 'refused' | 'timeout',
    options?: { cause?: unknown },
  ) {
    super(
      reason === 'timeout'
        ? 'The device did not authorise this browser in time.'
        : 'The device refused to authorise this browser.',
      options,
    );
    this.name = 'AdbAuthorisationError';
  }
}

/** The package could not be copied onto the device (download cut short, device refused the file). */
export class ApkPushError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ApkPushError';
  }
}

export interface AuthoriseParams {
  serial: string;
  connection: AdbDaemonConnection;
  /** Holds this browser's ADB key; the device remembers it when "Always allow" is ticked. */
  credentialStore: AdbCredentialStore;
  timeoutMs?: number;
}

/**
 * ADB authentication: the device either knows this browser's key already, or shows a prompt for it.
 * A device that refuses answers with a fresh challenge or hangs up; one that is never answered
 * stays silent, hence the time limit.
 */
export async function authorise(params: AuthoriseParams): Promise<Adb> {
  const { serial, connection, credentialStore, timeoutMs = DEFAULT_AUTHORISE_TIMEOUT_MS } = params;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AdbAuthorisationError('timeout')), timeoutMs);
  });
  try {
    const transport = await Promise.race([
      AdbDaemonTransport.authenticate({ serial, connection, credentialStore }).catch((err: unknown) => {
        throw new AdbAuthorisationError('refused', { cause: err });
      }),
      timeout,
    ]);
    return new Adb(transport);
  } finally {
    clearTimeout(timer);
  }
}

export type InstallPhase = 'push' | 'install' | 'cleanup' | 'done';

export interface InstallProgress {
  phase: InstallPhase;
  /** Bytes handed to the device so far. */
  pushed: number;
  /** The package's size from Content-Length, or null when the server did not say. */
  total: number | null;
}

export interface InstallParams {
  app: string;
  /** The package as it downloads: pushed chunk by chunk, never held whole. */
  apk: globalThis.ReadableStream<Uint8Array>;
  total: number | null;
  onProgress?: (progress: InstallProgress) => void;
}

export interface InstallResult {
  ok: boolean;
  /** What `pm install` printed (stdout, then stderr). */
  output: string;
  /** pm's exit code; null on devices without the shell protocol, which do not report it. */
  exitCode: number | null;
  path: string;
  pushed: number;
  /** Why the temporary file could not be removed, or null when it was. */
  cleanupError: string | null;
}

/** Pushes the package, installs it and removes the temporary file, whatever the outcome. */
export async function installApk(adb: Adb, params: InstallParams): Promise<InstallResult> {
  const path = devicePath(params.app);
  const report = params.onProgress ?? (() => undefined);
  let pushed = 0;
  let result: Omit<InstallResult, 'cleanupError'> | undefined;
  let failure: unknown;
  try {
    pushed = await push(adb, path, params, (n) => report({ phase: 'push', pushed: n, total: params.total }));
    report({ phase: 'install', pushed, total: params.total });
    result = { ...(await pmInstall(adb, path)), path, pushed };
  } catch (err) {
    failure = err;
  }
  report({ phase: 'cleanup', pushed, total: params.total });
  const cleanupError = await removeQuietly(adb, path);
  if (result === undefined) throw failure;
  report({ phase: 'done', pushed, total: params.total });
  return { ...result, cleanupError };
}

async function push(adb: Adb, path: string, params: InstallParams, onPushed: (bytes: number) => void): Promise<number> {
  const reader = params.apk.getReader();
  let pushed = 0;
  let downloadFailed!: (err: unknown) => void;
  const failed = new Promise<never>((_, reject) => {
    downloadFailed = reject;
  });
  // A source that reads the download only when the device takes more: USB sets the pace, so
  // memory holds a chunk or two, whatever the package's size.
  const file = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (err) {
          // The library swallows a source error and would wait for the device forever.
          const error = new ApkPushError(`The download stopped after ${pushed} bytes`, { cause: err });
          downloadFailed(error);
          controller.error(error);
          return;
        }
        if (chunk.done) {
          controller.close();
          return;
        }
        pushed += chunk.value.byteLength;
        onPushed(pushed);
        controller.enqueue(chunk.value);
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  const sync = await adb.sync();
  try {
    await Promise.race([sync.write({ filename: path, file, permission: PUSH_PERMISSION }), failed]);
  } catch (err) {
    if (err instanceof ApkPushError) throw err;
    throw new ApkPushError(`The device did not accept ${path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  } finally {
    await sync.dispose();
  }
  if (params.total !== null && pushed !== params.total) {
    throw new ApkPushError(`The download ended after ${pushed} of ${params.total} bytes`);
  }
  return pushed;
}

/**
 * `pm install -r` replaces an installed copy and keeps its data. Older package managers print
 * "Failure [...]" and still exit 0, so success is "Success" on the output and a zero exit.
 */
async function pmInstall(adb: Adb, path: string): Promise<{ ok: boolean; output: string; exitCode: number | null }> {
  const command = ['pm', 'install', '-r', path];
  const shell = adb.subprocess.shellProtocol;
  if (shell?.isSupported) {
    const { stdout, stderr, exitCode } = await shell.spawnWaitText(command);
    const output = [stdout.trim(), stderr.trim()].filter((s) => s !== '').join('\n');
    return { ok: exitCode === 0 && /^Success\b/m.test(stdout), output, exitCode };
  }
  const output = (await adb.subprocess.noneProtocol.spawnWaitText(command)).trim();
  return { ok: /^Success\b/m.test(output), output, exitCode: null };
}

/** Cleanup must not hide the install's own outcome, so its failure is returned, not thrown. */
async function removeQuietly(adb: Adb, path: string): Promise<string | null> {
  try {
    const output = (await adb.rm(path, { force: true })).trim();
    return output === '' ? null : output;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
