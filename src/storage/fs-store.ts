import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { GuardedStream, type BlobInfo, type BlobStore, type ByteRange, type WriteOptions } from './blob-store.ts';

/** Blobs as files under `<root>/<container>/<name>`; writes go to a temp file, then rename. */
export class FilesystemBlobStore implements BlobStore {
  readonly kind = 'filesystem' as const;
  readonly describe: string;
  private readonly dir: string;

  constructor(root: string, container: string) {
    this.dir = path.resolve(root, container);
    this.describe = `files in ${this.dir}`;
  }

  private pathOf(name: string): string {
    const p = path.resolve(this.dir, name);
    // Names are validated by callers; this is the last line against escaping the container.
    if (!p.startsWith(this.dir + path.sep)) throw new Error(`blob name escapes the container: ${name}`);
    return p;
  }

  async stat(name: string): Promise<BlobInfo | null> {
    try {
      const s = await stat(this.pathOf(name));
      if (!s.isFile()) return null;
      return { size: s.size, etag: `"${s.size.toString(16)}-${Math.floor(s.mtimeMs * 1000).toString(16)}"`, lastModified: s.mtime };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  read(name: string, range?: ByteRange): Promise<Readable> {
    // A bad name or range rejects, as from the other stores, rather than throwing.
    return new Promise((resolve) => resolve(createReadStream(this.pathOf(name), range === undefined ? {} : { start: range.start, end: range.end })));
  }

  async write(name: string, source: Readable, opts: WriteOptions): Promise<BlobInfo> {
    const final = this.pathOf(name);
    await mkdir(path.dirname(final), { recursive: true, mode: 0o700 });
    const temp = `${final}.upload-${randomBytes(6).toString('hex')}`;
    try {
      await pipeline(source, new GuardedStream(opts), createWriteStream(temp, { flags: 'wx', mode: 0o600 }));
      const fh = await open(temp, 'r');
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(temp, final);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
    const info = await this.stat(name);
    if (info === null) throw new Error(`blob ${name} vanished after writing`);
    return info;
  }

  async close(): Promise<void> {}
}
