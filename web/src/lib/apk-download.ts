/**
 * The brand's signed package from GET /api/admin/apk/:app, as a stream: the devices page pushes
 * it to the phone while it downloads, so the browser never holds the whole file.
 */
import { ApiError, apiUrl, refusalOf } from './http.ts';

export interface ApkDownload {
  body: ReadableStream<Uint8Array>;
  /** Content-Length, or null when the server did not send one. */
  total: number | null;
}

async function refusal(res: Response): Promise<ApiError> {
  if (res.status === 401) return new ApiError(401, 'unauthorized', 'Your session has ended; sign in again.');
  if (!(res.headers.get('content-type') ?? '').includes('json')) return refusalOf(res.status, res.statusText, undefined);
  try {
    return refusalOf(res.status, res.statusText, await res.json());
  } catch (err) {
    return new ApiError(res.status, `http_${res.status}`, `The server answered ${res.status} ${res.statusText} (unreadable body: ${String(err)})`);
  }
}

function request(app: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(apiUrl(`/api/admin/apk/${encodeURIComponent(app)}`), { credentials: 'same-origin', headers, cache: 'no-store' }).catch(
    (err: unknown) => {
      throw new ApiError(0, 'network', `The server could not be reached (${err instanceof Error ? err.message : String(err)})`);
    },
  );
}

/** Checks that the package exists and may be fetched, reading one byte of it. */
export async function checkApk(app: string): Promise<void> {
  const res = await request(app, { range: 'bytes=0-0' });
  if (!res.ok) throw await refusal(res);
  await res.body?.cancel();
}

export async function downloadApk(app: string): Promise<ApkDownload> {
  const res = await request(app);
  if (!res.ok) throw await refusal(res);
  if (res.body === null) throw new ApiError(res.status, 'empty', 'The server sent no package');
  const length = res.headers.get('content-length');
  const total = length === null || !/^\d+$/.test(length) ? null : Number(length);
  return { body: res.body, total };
}
