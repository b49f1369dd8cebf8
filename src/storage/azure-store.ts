import type { Readable } from 'node:stream';
import { BlobServiceClient, RestError, type ContainerClient } from '@azure/storage-blob';
import { GuardedStream, type BlobInfo, type BlobStore, type ByteRange, type WriteOptions } from './blob-store.ts';

const BLOCK_SIZE = 4 * 1024 * 1024;

/**
 * Azure Blob Storage. Uploads stage blocks and commit the block list only at the end, so the
 * stored blob changes all at once, and a failed or refused upload leaves the old one in place.
 */
export class AzureBlobStore implements BlobStore {
  readonly kind = 'azure' as const;
  readonly describe: string;
  private readonly container: ContainerClient;
  private ensured: Promise<unknown> | undefined;

  constructor(connectionString: string, containerName: string) {
    this.container = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(containerName);
    this.describe = `Azure Blob Storage container ${containerName}`;
  }

  async stat(name: string): Promise<BlobInfo | null> {
    try {
      const p = await this.container.getBlobClient(name).getProperties();
      return { size: p.contentLength ?? 0, etag: p.etag ?? '""', lastModified: p.lastModified ?? new Date(0) };
    } catch (err) {
      if (err instanceof RestError && err.statusCode === 404) return null;
      throw err;
    }
  }

  async read(name: string, range?: ByteRange): Promise<Readable> {
    const res =
      range === undefined
        ? await this.container.getBlobClient(name).download()
        : await this.container.getBlobClient(name).download(range.start, range.end - range.start + 1);
    const body = res.readableStreamBody;
    if (body === undefined) throw new Error(`blob ${name} has no body`);
    return body as Readable;
  }

  async write(name: string, source: Readable, opts: WriteOptions): Promise<BlobInfo> {
    this.ensured ??= this.container.createIfNotExists();
    await this.ensured;
    const guarded = new GuardedStream(opts);
    source.on('error', (err) => guarded.destroy(err));
    source.pipe(guarded);
    await this.container.getBlockBlobClient(name).uploadStream(guarded, BLOCK_SIZE, 2, {
      blobHTTPHeaders: { blobContentType: 'application/vnd.android.package-archive' },
    });
    const info = await this.stat(name);
    if (info === null) throw new Error(`blob ${name} vanished after writing`);
    return info;
  }

  async close(): Promise<void> {}
}
