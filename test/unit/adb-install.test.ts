/**
 * The devices page's install flow against a scripted Android device: the library's real
 * AdbDaemonTransport and Adb speak the ADB wire protocol to an in-memory daemon, which records
 * what a phone would have received (the pushed file, its path and mode, the commands).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Adb } from '@yume-chan/adb';
import {
  AdbAuthorisationError,
  ApkPushError,
  authorise,
  devicePath,
  installApk,
  type InstallProgress,
} from '../../web/src/lib/adb-install.ts';
import {
  LEGACY_FEATURES,
  MemoryCredentialStore,
  scriptedDevice,
  type ScriptedDevice,
  type ScriptedDeviceOptions,
} from '../helpers/adb-daemon.ts';
import { until } from '../helpers/wait.ts';

const PATH = '/data/local/tmp/acme.apk';
/** S_IFREG | rw-r--r-- */
const FILE_MODE = 0o100644;

/** A fake package: a ZIP local-file header, then bytes that differ at every offset. */
function apkBytes(size: number, seed = 7): Uint8Array {
  const b = new Uint8Array(size);
  let x = seed;
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  b.set([0x50, 0x4b, 0x03, 0x04], 0);
  return b;
}

/** Serves `bytes` in pieces of `chunk`, as a download does, counting how far it has been read. */
function download(bytes: Uint8Array, chunk = 50_000, failAfter?: number) {
  const state = { served: 0 };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (failAfter !== undefined && state.served >= failAfter) {
          controller.error(new TypeError('network error'));
          return;
        }
        if (state.served >= bytes.length) {
          controller.close();
          return;
        }
        const piece = bytes.slice(state.served, state.served + chunk);
        state.served += piece.length;
        controller.enqueue(piece);
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, state };
}

const credentials = new MemoryCredentialStore();
credentials.generateKey();

async function connect(opts: ScriptedDeviceOptions = {}): Promise<{ device: ScriptedDevice; adb: Adb }> {
  const device = scriptedDevice({ trustedKeys: [credentials.publicKey()], ...opts });
  const adb = await authorise({ serial: 'SCRIPTED01', connection: device.connection, credentialStore: credentials, timeoutMs: 5_000 });
  return { device, adb };
}

describe('ADB install flow on a scripted device', () => {
  test('a modern device: the package is pushed whole, installed with pm install -r, then removed', async () => {
    const { device, adb } = await connect();
    const apk = apkBytes(1_000_003);
    const source = download(apk);
    const progress: InstallProgress[] = [];
    const result = await installApk(adb, { app: 'acme', apk: source.stream, total: apk.length, onProgress: (p) => progress.push(p) });

    assert.equal(result.ok, true, result.output);
    assert.equal(result.output, 'Success');
    assert.equal(result.exitCode, 0);
    assert.equal(result.cleanupError, null);
    assert.equal(result.pushed, apk.length);

    assert.equal(device.pushes.length, 1);
    const push = device.pushes[0]!;
    assert.equal(push.path, PATH);
    assert.equal(push.mode, FILE_MODE);
    assert.equal(push.version, 2, 'a device with sendrecv_v2 gets the v2 push');
    assert.ok(Buffer.from(apk).equals(push.data), 'the bytes that arrived are the package');
    assert.ok(push.chunks >= Math.ceil(apk.length / 65_536), 'sent in sync packets of at most 64 KiB');

    assert.deepEqual(device.commands, [
      ['pm', 'install', '-r', PATH],
      ['rm', '-f', PATH],
    ]);
    assert.ok(device.services.includes(`shell,v2,raw:pm install -r ${PATH}`), 'pm runs under the shell protocol, for its exit code');
    assert.equal(device.files.has(PATH), false, 'the temporary file is gone');

    const pushes = progress.filter((p) => p.phase === 'push');
    assert.ok(pushes.length >= 10, `progress reported as it goes (${pushes.length} reports)`);
    for (let i = 1; i < pushes.length; i++) assert.ok(pushes[i]!.pushed > pushes[i - 1]!.pushed, 'progress only grows');
    assert.equal(pushes.at(-1)!.pushed, apk.length);
    assert.ok(progress.every((p) => p.total === apk.length));
    assert.deepEqual(
      progress.map((p) => p.phase).filter((ph, i, all) => ph !== all[i - 1]),
      ['push', 'install', 'cleanup', 'done'],
    );
    await adb.close();
  });

  test('the download is read only as fast as the device takes it', async () => {
    const { device, adb } = await connect();
    const apk = apkBytes(8 * 1024 * 1024);
    const source = download(apk, 64 * 1024);
    let lead = 0;
    await installApk(adb, {
      app: 'acme',
      apk: source.stream,
      total: apk.length,
      onProgress: () => (lead = Math.max(lead, source.state.served - device.syncBytes)),
    });
    // The library fills one ADB packet (the device's 1 MiB max payload) before sending it, so the
    // download may run that far, plus a chunk or two, ahead of the phone; never the whole file.
    const bound = 1024 * 1024 + 2 * 64 * 1024;
    assert.ok(lead <= bound, `${lead} bytes were read ahead of the device (bound ${bound}), not the whole 8 MiB`);
    await adb.close();
  });

  test('a failing install reports pm’s output and still removes the temporary file', async () => {
    const message = 'Failure [INSTALL_FAILED_UPDATE_INCOMPATIBLE: Existing package com.acme.pos signatures do not match newer version; ignoring!]';
    const { device, adb } = await connect({ pm: () => ({ stdout: `${message}\n`, exitCode: 1 }) });
    const apk = apkBytes(70_000);
    const result = await installApk(adb, { app: 'acme', apk: download(apk).stream, total: apk.length });
    assert.equal(result.ok, false);
    assert.equal(result.output, message);
    assert.equal(result.exitCode, 1);
    assert.deepEqual(device.commands.at(-1), ['rm', '-f', PATH]);
    assert.equal(device.files.has(PATH), false);
    await adb.close();
  });

  test('a legacy device: v1 push, pm without the shell protocol, "Failure" recognised despite exit 0', async () => {
    const { device, adb } = await connect({
      features: LEGACY_FEATURES,
      maxPayloadSize: 4096,
      pm: () => ({ stdout: '\tpkg: /data/local/tmp/acme.apk\nFailure [INSTALL_FAILED_OLDER_SDK]\n', exitCode: 0 }),
    });
    const apk = apkBytes(100_000);
    const result = await installApk(adb, { app: 'acme', apk: download(apk).stream, total: apk.length });
    assert.equal(device.pushes[0]?.version, 1);
    assert.equal(device.pushes[0]?.mode, FILE_MODE);
    assert.ok(Buffer.from(apk).equals(device.pushes[0].data));
    assert.ok(device.services.includes(`exec:pm install -r ${PATH}`));
    assert.equal(result.ok, false);
    assert.equal(result.exitCode, null, 'no exit code without the shell protocol');
    assert.match(result.output, /Failure \[INSTALL_FAILED_OLDER_SDK\]/);
    assert.equal(device.files.has(PATH), false);
    await adb.close();
  });

  test('a legacy device that installs: "Success" from exec output', async () => {
    const { device, adb } = await connect({ features: LEGACY_FEATURES });
    const apk = apkBytes(10_000);
    const result = await installApk(adb, { app: 'acme', apk: download(apk).stream, total: null });
    assert.equal(result.ok, true, result.output);
    assert.equal(result.output, 'Success');
    assert.equal(device.pushes[0]?.bytes, apk.length);
    await adb.close();
  });

  test('a download cut short fails the push; nothing is installed and the partial file is removed', async () => {
    const { device, adb } = await connect();
    const apk = apkBytes(500_000);
    await assert.rejects(
      installApk(adb, { app: 'acme', apk: download(apk, 50_000, 200_000).stream, total: apk.length }),
      (err: unknown) => err instanceof ApkPushError && /download stopped after 200000 bytes/.test(err.message),
    );
    assert.equal(device.commands.some((c) => c[0] === 'pm'), false, 'pm never ran');
    assert.deepEqual(device.commands.at(-1), ['rm', '-f', PATH]);
    await adb.close();
  });

  test('fewer bytes than Content-Length said: refused before install', async () => {
    const { device, adb } = await connect();
    const apk = apkBytes(30_000);
    await assert.rejects(
      installApk(adb, { app: 'acme', apk: download(apk).stream, total: 40_000 }),
      (err: unknown) => err instanceof ApkPushError && /after 30000 of 40000 bytes/.test(err.message),
    );
    assert.equal(device.commands.some((c) => c[0] === 'pm'), false);
    await adb.close();
  });

  test('a device that refuses the file: its message is reported', async () => {
    const { device, adb } = await connect({ pushFailure: 'No space left on device' });
    const apk = apkBytes(30_000);
    await assert.rejects(
      installApk(adb, { app: 'acme', apk: download(apk).stream, total: apk.length }),
      (err: unknown) => err instanceof ApkPushError && /did not accept \/data\/local\/tmp\/acme\.apk: No space left on device/.test(err.message),
    );
    assert.equal(device.commands.some((c) => c[0] === 'pm'), false);
    await adb.close();
  });

  test('the app name must be a brand key: no path tricks reach the device', () => {
    assert.equal(devicePath('acme-pos'), '/data/local/tmp/acme-pos.apk');
    for (const bad of ['../x', 'a b', 'A', '', 'a'.repeat(65), 'x;rm -rf /']) assert.throws(() => devicePath(bad), TypeError);
  });
});

describe('ADB authorisation on a scripted device', () => {
  test('a known key is accepted without a prompt', async () => {
    const { device, adb } = await connect();
    assert.equal(device.prompts, 0);
    assert.equal(adb.banner.model, 'Scripted Phone');
    await adb.close();
  });

  test('a new key: the device prompts, the person allows, and the key works next time', async () => {
    const store = new MemoryCredentialStore();
    const first = scriptedDevice({ prompt: 'accept' });
    const adb = await authorise({ serial: 'S1', connection: first.connection, credentialStore: store, timeoutMs: 5_000 });
    assert.equal(first.prompts, 1);
    assert.equal(store.keys.length, 1, 'a key was generated and stored');
    await adb.close();

    const again = scriptedDevice({ trustedKeys: [store.publicKey()], prompt: 'refuse' });
    const adb2 = await authorise({ serial: 'S1', connection: again.connection, credentialStore: store, timeoutMs: 5_000 });
    assert.equal(again.prompts, 0, 'remembered: no prompt');
    await adb2.close();
  });

  test('the person refuses: a refusal error', async () => {
    const device = scriptedDevice({ prompt: 'refuse' });
    await assert.rejects(
      authorise({ serial: 'S2', connection: device.connection, credentialStore: new MemoryCredentialStore(), timeoutMs: 5_000 }),
      (err: unknown) => err instanceof AdbAuthorisationError && err.reason === 'refused',
    );
    assert.equal(device.prompts, 1);
  });

  test('the prompt is never answered: a timeout error', async () => {
    const device = scriptedDevice({ prompt: 'ignore' });
    await assert.rejects(
      authorise({ serial: 'S3', connection: device.connection, credentialStore: new MemoryCredentialStore(), timeoutMs: 300 }),
      (err: unknown) => err instanceof AdbAuthorisationError && err.reason === 'timeout',
    );
    device.unplug();
  });

  test('the device is unplugged during authorisation: a refusal error', async () => {
    const device = scriptedDevice({ prompt: 'ignore' });
    const pending = authorise({ serial: 'S4', connection: device.connection, credentialStore: new MemoryCredentialStore(), timeoutMs: 5_000 });
    const refused = assert.rejects(pending, (err: unknown) => err instanceof AdbAuthorisationError && err.reason === 'refused');
    await until(() => device.prompts > 0, 4_000, 'the device to show its prompt');
    device.unplug();
    await refused;
  });
});
