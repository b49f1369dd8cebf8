/**
 * A scripted Android device: an in-memory ADB daemon speaking the ADB wire protocol as bytes
 * (CNXN, AUTH, OPEN, OKAY, WRTE, CLSE packets; the sync protocol for pushes; the shell v2 and
 * raw exec protocols for commands). The library's real AdbDaemonTransport and Adb drive it
 * exactly as they drive a phone over WebUSB, so a test sees what a phone would have received.
 */
import { constants, createPrivateKey, createPublicKey, generateKeyPairSync, publicDecrypt, randomBytes, type KeyObject } from 'node:crypto';
import { AdbPacket, AdbPacketSerializeStream, type AdbCredentialStore, type AdbDaemonConnection, type AdbPrivateKey } from '@yume-chan/adb';
import { MaybeConsumable, pipeFrom, ReadableStream, StructDeserializeStream, type ReadableStreamDefaultController } from '@yume-chan/stream-extra';

const CMD = { CNXN: 0x4e584e43, AUTH: 0x48545541, OPEN: 0x4e45504f, OKAY: 0x59414b4f, WRTE: 0x45545257, CLSE: 0x45534c43 } as const;
const AUTH_TOKEN = 1;
const AUTH_SIGNATURE = 2;
const AUTH_RSAPUBLICKEY = 3;
const VERSION = 0x01000001;
/** DER prefix of a SHA-1 DigestInfo: adbd checks the token signed as if it were a SHA-1 digest. */
const SHA1_DIGEST_INFO = Buffer.from('3021300906052b0e03021a05000414', 'hex');

/** An Android 14 phone's features; `delayed_ack` makes both sides use byte windows, not one packet. */
export const MODERN_FEATURES = [
  'shell_v2', 'cmd', 'stat_v2', 'ls_v2', 'fixed_push_mkdir', 'apex', 'abb', 'fixed_push_symlink_timestamp', 'abb_exec',
  'remount_shell', 'track_app', 'sendrecv_v2', 'sendrecv_v2_brotli', 'sendrecv_v2_lz4', 'sendrecv_v2_zstd',
  'sendrecv_v2_dry_run_send', 'delayed_ack',
];
/** An Android 6 phone: sync v1 pushes, no shell protocol (so no exit codes), one packet in flight. */
export const LEGACY_FEATURES = ['cmd'];

export interface CommandResult {
  stdout?: string;
  stderr?: string;
  exitCode?: number;
}
export type CommandScript = (argv: string[], device: ScriptedDevice) => CommandResult;

export interface StoredFile {
  data: Buffer;
  mode: number;
  mtime: number;
}

export interface Push {
  path: string;
  mode: number;
  bytes: number;
  data: Buffer;
  /** Sync DATA packets: each at most 64 KiB, so the push never held the file whole. */
  chunks: number;
  version: 1 | 2;
}

export interface ScriptedDeviceOptions {
  features?: string[];
  /** Keys the device already trusts ("Always allow from this computer" ticked earlier). */
  trustedKeys?: KeyObject[];
  /**
   * What the person does with the "Allow USB debugging?" prompt: allow, refuse (the device
   * answers with a fresh challenge, as adbd does for a key it will not take), or never answer.
   */
  prompt?: 'accept' | 'refuse' | 'ignore';
  maxPayloadSize?: number;
  /** Answers `pm ...`; the default installs any file that starts with a ZIP header. */
  pm?: CommandScript;
  /** The device answers the push with FAIL and this message (a full disk, say). */
  pushFailure?: string;
}

export interface ScriptedDevice {
  connection: AdbDaemonConnection;
  files: Map<string, StoredFile>;
  /** Every service the client opened, in order (`sync:`, `shell,v2,raw:pm install ...`). */
  services: string[];
  /** Commands run, as argv, in order. */
  commands: string[][];
  pushes: Push[];
  /** Times the device showed the authorisation prompt. */
  prompts: number;
  /** Bytes received on sync sockets so far: how far a push has got. */
  syncBytes: number;
  /** Ends the connection, as unplugging the cable would. */
  unplug(): void;
}

/** A byte queue a service reads from at its own pace. */
class Input {
  private buf = Buffer.alloc(0);
  private waiting: (() => void) | null = null;
  private ended = false;

  push(bytes: Uint8Array): void {
    this.buf = Buffer.concat([this.buf, bytes]);
    this.wake();
  }
  end(): void {
    this.ended = true;
    this.wake();
  }
  private wake(): void {
    const w = this.waiting;
    this.waiting = null;
    w?.();
  }
  /** Exactly n bytes, or null when the client closed the socket first. */
  async read(n: number): Promise<Buffer | null> {
    while (this.buf.length < n) {
      if (this.ended) return null;
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return Buffer.from(out);
  }
}

interface Socket {
  localId: number;
  remoteId: number;
  service: string;
  input: Input;
  /** Bytes the client still accepts before acknowledging (Infinity-free: 0 means wait). */
  window: number;
  /** Bytes sent to the client and not acknowledged yet. */
  unacked: number;
  acked: (() => void) | null;
  closed: boolean;
}

/** A Node credential store: RSA keys in memory, in the PKCS #8 form the library signs with. */
export class MemoryCredentialStore implements AdbCredentialStore {
  readonly keys: AdbPrivateKey[] = [];
  generateKey(): AdbPrivateKey {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 65537 });
    const key = { buffer: new Uint8Array(privateKey.export({ type: 'pkcs8', format: 'der' })), name: 'splitline@test' };
    this.keys.push(key);
    return key;
  }
  *iterateKeys(): Generator<AdbPrivateKey> {
    yield* this.keys;
  }
  publicKey(index = 0): KeyObject {
    const key = this.keys[index];
    if (key === undefined) throw new Error(`no key ${index} in the store`);
    return createPublicKey(createPrivateKey({ key: Buffer.from(key.buffer), format: 'der', type: 'pkcs8' }));
  }
}

/** adbd's RSAPublicKey struct (base64, then " name"): modulus and exponent, little-endian words. */
function parseAdbPublicKey(payload: Uint8Array): KeyObject {
  const text = Buffer.from(payload).toString('latin1').replace(/\0$/, '');
  const raw = Buffer.from(text.split(' ')[0] ?? '', 'base64');
  const words = raw.readUInt32LE(0);
  const modulus = Buffer.from(raw.subarray(8, 8 + words * 4)).reverse();
  const exponent = raw.readUInt32LE(8 + words * 8);
  const e = Buffer.alloc(4);
  e.writeUInt32BE(exponent);
  const jwk = { kty: 'RSA', n: modulus.toString('base64url'), e: e.subarray(e.findIndex((b) => b !== 0)).toString('base64url') };
  return createPublicKey({ key: jwk, format: 'jwk' });
}

function signedBy(key: KeyObject, token: Buffer, signature: Uint8Array): boolean {
  let decoded: Buffer;
  try {
    decoded = publicDecrypt({ key, padding: constants.RSA_PKCS1_PADDING }, signature);
  } catch (err) {
    // A signature made with another key fails its padding check: not this key.
    if (err instanceof Error && /padding|decrypt|rsa/i.test(err.message)) return false;
    throw err;
  }
  return decoded.equals(Buffer.concat([SHA1_DIGEST_INFO, token]));
}

/** Splits a command line as the device's shell would for the simple commands the client sends. */
function argv(command: string): string[] {
  return (command.match(/'[^']*'|[^\s]+/g) ?? []).map((a) => a.replace(/^'(.*)'$/, '$1')).filter((a) => !a.startsWith('<'));
}

const defaultPm: CommandScript = (args, device) => {
  const path = args[args.length - 1] ?? '';
  const file = device.files.get(path);
  if (args[1] !== 'install' || file === undefined) return { stderr: `Error: Unable to open file: ${path}\n`, exitCode: 1 };
  if (file.data.subarray(0, 4).toString('latin1') !== 'PK\x03\x04') {
    return { stdout: 'Failure [INSTALL_PARSE_FAILED_NOT_APK: Failed to parse]\n', exitCode: 1 };
  }
  return { stdout: 'Success\n', exitCode: 0 };
};

export function scriptedDevice(opts: ScriptedDeviceOptions = {}): ScriptedDevice {
  const features = opts.features ?? MODERN_FEATURES;
  const maxPayload = opts.maxPayloadSize ?? 1024 * 1024;
  const trusted = [...(opts.trustedKeys ?? [])];
  let out!: ReadableStreamDefaultController<Uint8Array>;
  /** Set once either side has hung up: nothing more goes out. */
  let ended = false;
  const fromDevice = new ReadableStream<Uint8Array>({
    start: (c) => void (out = c),
    cancel: () => void (ended = true),
  });
  let connected = false;
  let delayedAck = false;
  let token = randomBytes(20);
  let nextId = 1;
  const sockets = new Map<number, Socket>();

  const device: ScriptedDevice = {
    connection: undefined as unknown as AdbDaemonConnection,
    files: new Map(),
    services: [],
    commands: [],
    pushes: [],
    prompts: 0,
    syncBytes: 0,
    unplug: () => {
      if (ended) return;
      ended = true;
      out.close();
    },
  };

  function send(command: number, arg0: number, arg1: number, payload: Uint8Array = new Uint8Array(0)): void {
    if (ended) return;
    const header = Buffer.alloc(24);
    header.writeUInt32LE(command, 0);
    header.writeUInt32LE(arg0, 4);
    header.writeUInt32LE(arg1, 8);
    header.writeUInt32LE(payload.length, 12);
    header.writeUInt32LE(payload.reduce((sum, b) => sum + b, 0) >>> 0, 16);
    header.writeUInt32LE((command ^ 0xffffffff) >>> 0, 20);
    out.enqueue(new Uint8Array(Buffer.concat([header, payload])));
  }

  function okay(socket: Socket, ackBytes: number): void {
    if (!delayedAck) return send(CMD.OKAY, socket.localId, socket.remoteId);
    const payload = Buffer.alloc(4);
    payload.writeUInt32LE(ackBytes);
    send(CMD.OKAY, socket.localId, socket.remoteId, payload);
  }

  /** Writes to the client, honouring its window: one packet per OKAY, or bytes with delayed ack. */
  async function write(socket: Socket, data: Uint8Array): Promise<void> {
    for (let at = 0; at < data.length; at += maxPayload) {
      const chunk = data.subarray(at, at + maxPayload);
      while (socket.window < chunk.length && !socket.closed) await new Promise<void>((resolve) => (socket.acked = resolve));
      if (socket.closed) return;
      socket.window = delayedAck ? socket.window - chunk.length : 0;
      socket.unacked += chunk.length;
      send(CMD.WRTE, socket.localId, socket.remoteId, chunk);
    }
  }

  /** Closes once the client has acknowledged everything, as adbd does: CLSE never overtakes data. */
  async function finish(socket: Socket): Promise<void> {
    while (socket.unacked > 0 && !socket.closed) await new Promise<void>((resolve) => (socket.acked = resolve));
    close(socket);
  }

  function close(socket: Socket): void {
    if (socket.closed) return;
    socket.closed = true;
    socket.input.end();
    socket.acked?.();
    send(CMD.CLSE, socket.localId, socket.remoteId);
  }

  function run(command: string): CommandResult {
    const args = argv(command);
    device.commands.push(args);
    switch (args[0]) {
      case 'pm':
        return (opts.pm ?? defaultPm)(args, device);
      case 'rm':
        for (const path of args.slice(1).filter((a) => !a.startsWith('-'))) device.files.delete(path);
        return { exitCode: 0 };
      case 'mkdir':
        return { exitCode: 0 };
      default:
        return { stderr: `/system/bin/sh: ${args[0]}: inaccessible or not found\n`, exitCode: 127 };
    }
  }

  async function shellV2(socket: Socket, command: string): Promise<void> {
    const result = run(command);
    const packet = (id: number, data: Uint8Array) => {
      const header = Buffer.alloc(5);
      header.writeUInt8(id, 0);
      header.writeUInt32LE(data.length, 1);
      return Buffer.concat([header, data]);
    };
    if (result.stdout) await write(socket, packet(1, Buffer.from(result.stdout)));
    if (result.stderr) await write(socket, packet(2, Buffer.from(result.stderr)));
    await write(socket, packet(3, Buffer.from([result.exitCode ?? 0])));
    await finish(socket);
  }

  async function exec(socket: Socket, command: string): Promise<void> {
    const result = run(command);
    const output = (result.stdout ?? '') + (result.stderr ?? '');
    if (output !== '') await write(socket, Buffer.from(output));
    await finish(socket);
  }

  /** The sync service: SEND (v1) and SND2 (v2) pushes, then DATA chunks and DONE. */
  async function sync(socket: Socket): Promise<void> {
    const reply = async (id: string, body: Buffer) => write(socket, Buffer.concat([Buffer.from(id, 'latin1'), body]));
    for (;;) {
      const request = await socket.input.read(8);
      if (request === null) return;
      const id = request.subarray(0, 4).toString('latin1');
      const arg = request.readUInt32LE(4);
      if (id === 'QUIT') return finish(socket);
      if (id !== 'SEND' && id !== 'SND2') {
        const message = Buffer.from(`unsupported sync request ${id}`);
        const length = Buffer.alloc(4);
        length.writeUInt32LE(message.length);
        await reply('FAIL', Buffer.concat([length, message]));
        return finish(socket);
      }
      const name = (await socket.input.read(arg))?.toString('utf8');
      if (name === undefined) return;
      let path = name;
      let mode: number;
      if (id === 'SEND') {
        const comma = name.lastIndexOf(',');
        path = name.slice(0, comma);
        mode = Number(name.slice(comma + 1));
      } else {
        const v2 = await socket.input.read(12);
        if (v2 === null) return;
        mode = v2.readUInt32LE(4);
      }
      const parts: Buffer[] = [];
      let chunks = 0;
      let mtime: number;
      for (;;) {
        const head = await socket.input.read(8);
        if (head === null) return;
        const kind = head.subarray(0, 4).toString('latin1');
        const n = head.readUInt32LE(4);
        if (kind === 'DONE') {
          mtime = n;
          break;
        }
        if (kind !== 'DATA' || n > 64 * 1024) throw new Error(`bad sync data packet ${kind} ${n}`);
        const data = await socket.input.read(n);
        if (data === null) return;
        parts.push(data);
        chunks += 1;
      }
      const data = Buffer.concat(parts);
      device.pushes.push({ path, mode, bytes: data.length, data, chunks, version: id === 'SEND' ? 1 : 2 });
      if (opts.pushFailure !== undefined) {
        const message = Buffer.from(opts.pushFailure);
        const length = Buffer.alloc(4);
        length.writeUInt32LE(message.length);
        await reply('FAIL', Buffer.concat([length, message]));
        continue;
      }
      device.files.set(path, { data, mode, mtime });
      await reply('OKAY', Buffer.alloc(4));
    }
  }

  function open(remoteId: number, window: number, payload: Uint8Array): void {
    const service = Buffer.from(payload).toString('utf8').replace(/\0$/, '');
    device.services.push(service);
    const socket: Socket = {
      localId: nextId++,
      remoteId,
      service,
      input: new Input(),
      window: delayedAck ? window : Infinity,
      unacked: 0,
      acked: null,
      closed: false,
    };
    let handler: (() => Promise<void>) | undefined;
    if (service === 'sync:') handler = () => sync(socket);
    else if (service.startsWith('shell,v2,raw:') && features.includes('shell_v2')) handler = () => shellV2(socket, service.slice('shell,v2,raw:'.length));
    else if (service.startsWith('exec:')) handler = () => exec(socket, service.slice('exec:'.length));
    if (handler === undefined) return send(CMD.CLSE, 0, remoteId);
    sockets.set(socket.localId, socket);
    okay(socket, 2 * 1024 * 1024);
    // A phone answers a moment later, never within the same tick as its OKAY.
    setImmediate(() => {
      handler().catch((err: unknown) => {
        if (!ended) out.error(err);
        ended = true;
      });
    });
  }

  function authenticated(): void {
    connected = true;
    const banner = `device::ro.product.name=splitline_test;ro.product.model=Scripted Phone;ro.product.device=scripted;features=${features.join(',')}`;
    send(CMD.CNXN, VERSION, maxPayload, Buffer.from(banner));
  }

  function packet(command: number, arg0: number, arg1: number, payload: Uint8Array): void {
    if (command === CMD.CNXN) {
      const host = Buffer.from(payload).toString('utf8');
      delayedAck = features.includes('delayed_ack') && /features=[^;]*\bdelayed_ack\b/.test(host);
      connected = false;
      token = randomBytes(20);
      return send(CMD.AUTH, AUTH_TOKEN, 0, token);
    }
    if (command === CMD.AUTH && !connected) {
      if (arg0 === AUTH_SIGNATURE) {
        if (trusted.some((key) => signedBy(key, token, payload))) return authenticated();
        token = randomBytes(20);
        return send(CMD.AUTH, AUTH_TOKEN, 0, token);
      }
      if (arg0 === AUTH_RSAPUBLICKEY) {
        device.prompts += 1;
        if (opts.prompt === 'ignore') return;
        if (opts.prompt === 'refuse') {
          token = randomBytes(20);
          return send(CMD.AUTH, AUTH_TOKEN, 0, token);
        }
        trusted.push(parseAdbPublicKey(payload));
        return authenticated();
      }
      return;
    }
    if (!connected) return;
    const socket = sockets.get(arg1);
    switch (command) {
      case CMD.OPEN:
        return open(arg0, arg1, payload);
      case CMD.WRTE:
        if (socket === undefined) return;
        socket.input.push(payload);
        if (socket.service === 'sync:') device.syncBytes += payload.length;
        return okay(socket, payload.length);
      case CMD.OKAY:
        if (socket === undefined) return;
        {
          const ack = delayedAck ? Buffer.from(payload).readUInt32LE(0) : socket.unacked;
          socket.window = delayedAck ? socket.window + ack : Infinity;
          socket.unacked -= ack;
        }
        socket.acked?.();
        socket.acked = null;
        return;
      case CMD.CLSE:
        if (socket === undefined) return;
        sockets.delete(socket.localId);
        return close(socket);
    }
  }

  // The client's packets arrive as the bytes a USB endpoint would carry.
  let pending = Buffer.alloc(0);
  const toDevice = new MaybeConsumable.WritableStream<Uint8Array>({
    close() {
      device.unplug();
    },
    abort() {
      device.unplug();
    },
    write(chunk) {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 24) {
        const command = pending.readUInt32LE(0);
        const length = pending.readUInt32LE(12);
        if (pending.length < 24 + length) break;
        if (pending.readUInt32LE(20) !== (command ^ 0xffffffff) >>> 0) throw new Error('bad packet magic');
        const checksum = pending.readUInt32LE(16);
        const payload = Buffer.from(pending.subarray(24, 24 + length));
        if (checksum !== 0 && checksum !== payload.reduce((sum, b) => sum + b, 0) >>> 0) throw new Error('bad packet checksum');
        packet(command, pending.readUInt32LE(4), pending.readUInt32LE(8), payload);
        pending = pending.subarray(24 + length);
      }
    },
  });

  device.connection = {
    readable: fromDevice.pipeThrough(new StructDeserializeStream(AdbPacket)),
    writable: pipeFrom(toDevice, new AdbPacketSerializeStream()),
  };
  return device;
}
