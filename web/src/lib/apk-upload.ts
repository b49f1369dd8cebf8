/**
 * Uploads a brand's signed APK with PUT /api/admin/apk/:app (superadmin), reporting progress.
 * XMLHttpRequest rather than fetch: only it reports how much of a request body has been sent.
 */
import { ApkUploaded } from '../../../src/contract/apk.ts';
import { check, ContractError } from '../../../src/contract/check.ts';
import { ApiError, apiUrl, currentCsrfToken, refusalOf } from './http.ts';

export const APK_CONTENT_TYPE = 'application/vnd.android.package-archive';

export interface UploadProgress {
  sent: number;
  total: number;
}

export interface Uploaded {
  app: string;
  size: number;
}

function refusal(xhr: XMLHttpRequest): ApiError {
  if (xhr.status === 401) return new ApiError(401, 'unauthorized', 'Your session has ended; sign in again.');
  let body: unknown = undefined;
  if ((xhr.getResponseHeader('content-type') ?? '').includes('json')) {
    try {
      body = JSON.parse(xhr.responseText);
    } catch (err) {
      return new ApiError(xhr.status, `http_${xhr.status}`, `The server answered ${xhr.status} ${xhr.statusText} (unreadable body: ${err instanceof Error ? err.message : String(err)})`);
    }
  }
  return refusalOf(xhr.status, xhr.statusText, body);
}

/** Sends `file` as the package of brand `app`; `onProgress` hears the bytes sent so far. */
export function uploadApk(app: string, file: Blob, onProgress: (p: UploadProgress) => void, signal?: AbortSignal): Promise<Uploaded> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', apiUrl(`/api/admin/apk/${encodeURIComponent(app)}`));
    xhr.setRequestHeader('content-type', APK_CONTENT_TYPE);
    xhr.setRequestHeader('accept', 'application/json');
    const csrf = currentCsrfToken();
    if (csrf !== null) xhr.setRequestHeader('x-csrf-token', csrf);
    xhr.upload.onprogress = (e) => onProgress({ sent: e.loaded, total: e.lengthComputable ? e.total : file.size });
    xhr.onload = () => {
      if (xhr.status !== 200) {
        reject(refusal(xhr));
        return;
      }
      try {
        const body = check(ApkUploaded, JSON.parse(xhr.responseText), `PUT /api/admin/apk/${app}`);
        onProgress({ sent: file.size, total: file.size });
        resolve({ app: body.app, size: body.size });
      } catch (err) {
        reject(new ApiError(xhr.status, 'bad_response', err instanceof ContractError ? err.message : `The server's answer was not understood (${err instanceof Error ? err.message : String(err)})`));
      }
    };
    xhr.onerror = () => reject(new ApiError(0, 'network', 'The upload was cut off: the server could not be reached or closed the connection.'));
    xhr.ontimeout = () => reject(new ApiError(0, 'timeout', 'The upload took too long.'));
    xhr.onabort = () => reject(new ApiError(0, 'aborted', 'The upload was cancelled.'));
    signal?.addEventListener('abort', () => xhr.abort(), { once: true });
    xhr.send(file);
  });
}
