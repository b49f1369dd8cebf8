/**
 * Blob storage for signed APKs: the local filesystem by default, Azure Blob Storage when
 * STORAGE_CONNECTION_STRING is set. Both stream in and out; neither holds a whole file in memory.
 * A write replaces the stored blob only once every byte arrived and passed the checks.
 */
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { AppError } from '../lib/errors.ts';

export interface BlobInfo {
  size: number;
  /** Strong entity tag, quoted, as sent in the ETag header. */
  etag: string;
  lastModified: Date;
}

export interface ByteRange {
  start: number;
  /** Inclusive. */
  end: number;
}

export interface WriteOptions {
  maxBytes: number;
  /** Checks the first bytes (at least `headerBytes` of them, or all there are); throws to refuse. */
  validateHeader?: (head: Buffer) => void;
  headerBytes?: number;
}

export interface BlobStore {
  readonly kind: 'filesystem' | 'azure';
  readonly describe: string;
  stat(name: string): Promise<BlobInfo | null>;
  read(name: string, range?: ByteRange): Promise<Readable>;
  write(name: string, source: Readable, opts: WriteOptions): Promise<BlobInfo>;
  close(): Promise<void>;
}

export class PayloadTooLarge extends AppError {
  constructor(readonly maxBytes: number) {
    super(413, 'payload_too_large', `The upload is larger than the ${maxBytes}-byte limit`);
  }
}

/**
 * Counts bytes, refuses past the limit, and runs the header check before the first byte moves
 * on, so a refused upload never reaches storage as a complete blob.
 */
export class GuardedStream extends Transform {
  bytes = 0;
  private head: Buffer[] = [];
  private headLen = 0;
  private checked = false;

  constructor(private readonly opts: WriteOptions) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.opts.maxBytes) return done(new PayloadTooLarge(this.opts.maxBytes));
    if (this.checked) return done(null, chunk);
    this.head.push(chunk);
    this.headLen += chunk.length;
    if (this.headLen < (this.opts.headerBytes ?? 0)) return done();
    this.release(done);
  }

  override _flush(done: TransformCallback): void {
    if (this.checked) return done();
    this.release(done);
  }

  private release(done: TransformCallback): void {
    const buffered = Buffer.concat(this.head);
    this.head = [];
    try {
      this.opts.validateHeader?.(buffered);
    } catch (err) {
      return done(err as Error);
    }
    this.checked = true;
    done(null, buffered);
  }
}
