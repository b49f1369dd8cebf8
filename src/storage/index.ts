import path from 'node:path';
import type { Config } from '../config.ts';
import type { BlobStore } from './blob-store.ts';
import { FilesystemBlobStore } from './fs-store.ts';

/** The Azure SDK is loaded only when configured: it costs some 40 MB of memory otherwise unused. */
export async function createBlobStore(config: Config): Promise<BlobStore> {
  if (config.storageConnectionString !== undefined) {
    const { AzureBlobStore } = await import('./azure-store.ts');
    return new AzureBlobStore(config.storageConnectionString, config.apkContainer);
  }
  return new FilesystemBlobStore(path.resolve(config.dataDir, 'blobs'), config.apkContainer);
}
