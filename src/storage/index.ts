import path from 'node:path';
import type { Config } from '../config.ts';
import { AzureBlobStore } from './azure-store.ts';
import type { BlobStore } from './blob-store.ts';
import { FilesystemBlobStore } from './fs-store.ts';

export function createBlobStore(config: Config): BlobStore {
  if (config.storageConnectionString !== undefined) {
    return new AzureBlobStore(config.storageConnectionString, config.apkContainer);
  }
  return new FilesystemBlobStore(path.resolve(config.dataDir, 'blobs'), config.apkContainer);
}
