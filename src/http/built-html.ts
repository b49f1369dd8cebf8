import { readFile, stat } from 'node:fs/promises';

/**
 * Reads a page of the web build, re-read only when a new build replaces it; null when there is no
 * build (or one is being written). Each caller keeps its own cache, per app.
 */
export function builtHtmlReader(file: string): () => Promise<string | null> {
  let cached: { mtimeMs: number; html: string } | null = null;
  return async () => {
    try {
      const info = await stat(file);
      if (cached === null || cached.mtimeMs !== info.mtimeMs) cached = { mtimeMs: info.mtimeMs, html: await readFile(file, 'utf8') };
      return cached.html;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  };
}
