/**
 * An append-only file of lines, durable line by line: a line counts as written only once it has
 * been fsync'd. Lines appended while a sync is running go out together in the next write and
 * sync (group commit), so a stream of writes costs one fsync per batch, not per line.
 */
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

interface Queued {
  line: string;
  onDurable: () => void;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface OpenedLog {
  log: AppendLog;
  /** Complete lines already in the file, oldest first (empty lines left out). */
  lines: string[];
  /** Bytes of a last line cut short by a crash; they were never acknowledged and are cut off. */
  tornTail: number;
}

export class AppendLog {
  private queue: Queued[] = [];
  private flushScheduled = false;
  /** Set after a failed write, which may have left half a line: the next write starts a new one. */
  private needsNewline = false;
  private lock: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(
    readonly filePath: string,
    private fd: FileHandle,
  ) {}

  static async open(filePath: string): Promise<OpenedLog> {
    // 0600: the journal holds payment URLs, each a credential for its receipt's payment page.
    const fd = await open(filePath, 'a+', 0o600);
    try {
      const buf = await fd.readFile();
      const end = buf.lastIndexOf(0x0a) + 1;
      const tornTail = buf.length - end;
      if (tornTail > 0) {
        await fd.truncate(end);
        await fd.sync();
      }
      const lines = buf
        .subarray(0, end)
        .toString('utf8')
        .split('\n')
        .filter((l) => l.trim() !== '');
      return { log: new AppendLog(filePath, fd), lines, tornTail };
    } catch (err) {
      await fd.close();
      throw err;
    }
  }

  /**
   * Appends one line. `onDurable` runs once the line is on disk, before any later write or
   * rewrite starts; the promise settles after it.
   */
  append(line: string, onDurable: () => void): Promise<void> {
    if (this.closed) return Promise.reject(new Error('The journal is closed'));
    if (line.includes('\n')) return Promise.reject(new Error('A journal line cannot hold a newline'));
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ line, onDurable, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        void this.exclusive(() => this.flush());
      }
    });
  }

  /**
   * Replaces the file's content atomically: a new file written and fsync'd beside it, then renamed
   * over it. `lines` is called once no write is running, so it sees every durable line.
   */
  rewrite(lines: () => string[]): Promise<void> {
    return this.exclusive(async () => {
      if (this.closed) return;
      const tmp = `${this.filePath}.tmp`;
      await rm(tmp, { force: true });
      const next = await open(tmp, 'a', 0o600);
      try {
        const content = lines().map((l) => `${l}\n`).join('');
        if (content !== '') await next.appendFile(content);
        await next.sync();
        await rename(tmp, this.filePath);
      } catch (err) {
        await next.close();
        throw err;
      }
      // The new file is in place; the old handle points at the replaced file and must not be used.
      const old = this.fd;
      this.fd = next;
      this.needsNewline = false;
      await old.close();
      await syncDir(path.dirname(this.filePath));
    });
  }

  /** Waits for queued writes, then closes the file. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return this.exclusive(async () => {
      await this.flush();
      this.closed = true;
      await this.fd.close();
    });
  }

  private async flush(): Promise<void> {
    this.flushScheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    try {
      const prefix = this.needsNewline ? '\n' : '';
      await this.fd.appendFile(prefix + batch.map((q) => `${q.line}\n`).join(''));
      this.needsNewline = false;
      await this.fd.sync();
    } catch (err) {
      this.needsNewline = true;
      for (const q of batch) q.reject(err);
      return;
    }
    for (const q of batch) {
      q.onDurable();
      q.resolve();
    }
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn);
    this.lock = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }
}

/** Appends lines to a file and fsyncs them, for files written rarely (rejected entries). */
export async function appendDurably(filePath: string, lines: string[]): Promise<void> {
  const fd = await open(filePath, 'a', 0o600);
  try {
    await fd.appendFile(lines.map((l) => `${l}\n`).join(''));
    await fd.sync();
  } finally {
    await fd.close();
  }
}

/** Makes a rename in `dir` durable. */
async function syncDir(dir: string): Promise<void> {
  const d = await open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}
