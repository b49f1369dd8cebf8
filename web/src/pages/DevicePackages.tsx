/**
 * The devices page's packages: what is missing before anything can be installed (no package
 * uploaded yet; the superadmin role to upload one), the stored packages, and the superadmin's
 * upload with a progress bar.
 */
import { useRef, useState, type FormEvent } from 'react';
import type { ApkList, Platform, Session } from '../lib/api.ts';
import { APP_NAME } from '../lib/adb-install.ts';
import { uploadApk, type UploadProgress } from '../lib/apk-upload.ts';
import { formatDateTime } from '../lib/format.ts';
import type { Loaded } from '../lib/hooks.ts';
import { messageOf } from '../lib/http.ts';
import { Button, ErrorNote, Field, FormActions, Loading, Notice } from '../components/ui.tsx';

export function formatBytes(n: number): string {
  if (n < 1000) return `${n} bytes`;
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)} kB`;
  return `${(n / 1_000_000).toFixed(1)} MB`;
}

/** What stands between this session and an install, said before anything is tried. */
export function MissingNote(props: { list: ApkList | null; platform: Platform; session: Session }) {
  const { list, platform } = props;
  if (list === null) return null;
  const own = list.packages.find((p) => p.app === platform.brandKey);
  if (own === undefined || own.stored) return null;
  return (
    <Notice kind="warn" testId="devices-missing">
      <strong>No package uploaded yet</strong> for brand <span className="mono">{platform.brandKey}</span>: there is nothing to
      install until a superadmin uploads the signed APK.{' '}
      {list.canUpload ? (
        'You are a superadmin: upload it under Packages below.'
      ) : (
        <span data-testid="devices-needs-superadmin">
          Your wallet <span className="mono break">{props.session.wallet}</span> lacks the superadmin role needed to upload it.
          The server grants that role to the wallets listed in its <code>SUPERADMIN_WALLETS</code> setting (comma-separated,
          read at start-up): ask whoever runs this server to upload the package, or to add your wallet and restart it.
        </span>
      )}
    </Notice>
  );
}

/** The packages this page knows of, and (for a superadmin) the upload form. */
export function Packages(props: { list: Loaded<ApkList>; platform: Platform; onUploaded: (app: string) => void }) {
  const { list, platform } = props;
  const data = list.data;
  return (
    <div className="card packages-card" data-testid="apk-packages">
      <h2>Packages</h2>
      {list.loading && data === null && <Loading what="packages" />}
      <ErrorNote message={list.error === null ? null : `The stored packages cannot be read right now: ${list.error}`} />
      {data !== null && (
        <ul className="plain-list package-list">
          {data.packages.map((p) => (
            <li key={p.app} data-testid="apk-package" data-app={p.app} data-stored={String(p.stored)}>
              <strong className="mono">{p.app}</strong>{' '}
              {p.stored && p.size !== null ? (
                <span className="muted small">
                  signed package, {formatBytes(p.size)}
                  {p.lastModified !== null && `, uploaded ${formatDateTime(p.lastModified)}`}
                </span>
              ) : (
                <span className="muted small">no package uploaded yet</span>
              )}
            </li>
          ))}
        </ul>
      )}
      {data !== null &&
        (data.canUpload ? (
          <UploadForm platform={platform} onUploaded={props.onUploaded} />
        ) : (
          <p className="muted small" data-testid="upload-needs-superadmin">
            Only a superadmin uploads packages: the wallets listed in the server&apos;s <code>SUPERADMIN_WALLETS</code> setting.
          </p>
        ))}
    </div>
  );
}

type UploadState =
  | { kind: 'idle' }
  | { kind: 'sending'; app: string; progress: UploadProgress }
  | { kind: 'done'; app: string; size: number }
  | { kind: 'failed'; message: string };

function UploadForm(props: { platform: Platform; onUploaded: (app: string) => void }) {
  const { platform } = props;
  const pickAny = platform.containerType === 'platform';
  const [brand, setBrand] = useState(platform.brandKey);
  const [file, setFile] = useState<File | null>(null);
  const [errors, setErrors] = useState<{ brand?: string; file?: string }>({});
  const [state, setState] = useState<UploadState>({ kind: 'idle' });
  const lastPercent = useRef(-1);
  const sending = state.kind === 'sending';

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const app = pickAny ? brand.trim() : platform.brandKey;
    const errs: { brand?: string; file?: string } = {};
    if (!APP_NAME.test(app)) errs.brand = 'A brand key: 1 to 64 lowercase letters, digits or dashes';
    if (file === null) errs.file = 'Choose the signed .apk file';
    setErrors(errs);
    if (errs.brand !== undefined || file === null) return;
    lastPercent.current = -1;
    setState({ kind: 'sending', app, progress: { sent: 0, total: file.size } });
    uploadApk(app, file, (progress) => {
      // One render per percent: a large package reports many chunks.
      const percent = Math.floor((progress.sent * 100) / Math.max(progress.total, 1));
      if (percent === lastPercent.current) return;
      lastPercent.current = percent;
      setState({ kind: 'sending', app, progress });
    }).then(
      (uploaded) => {
        setState({ kind: 'done', app: uploaded.app, size: uploaded.size });
        props.onUploaded(uploaded.app);
      },
      (err: unknown) => setState({ kind: 'failed', message: `The package was not uploaded: ${messageOf(err)}` }),
    );
  };

  return (
    <form className="form upload-form" onSubmit={onSubmit} noValidate data-testid="upload-form">
      <h3>Upload a signed package</h3>
      <p className="muted small">Replaces the brand&apos;s stored package once the whole file has arrived and checked out as an APK.</p>
      {pickAny ? (
        <Field label="Brand of the package" error={errors.brand} hint="A brand key; this container's own is pre-filled">
          {(id, invalid) => (
            <input id={id} name="upload-brand" value={brand} aria-invalid={invalid} disabled={sending} autoComplete="off" spellCheck={false} onChange={(e) => setBrand(e.target.value)} />
          )}
        </Field>
      ) : (
        <p className="small">
          Brand <strong className="mono">{platform.brandKey}</strong> (this partner container&apos;s own)
        </p>
      )}
      <Field label="Signed APK" error={errors.file}>
        {(id, invalid) => (
          <input
            id={id}
            name="apk"
            type="file"
            accept=".apk,application/vnd.android.package-archive"
            aria-invalid={invalid}
            disabled={sending}
            onChange={(e) => setFile(e.target.files?.[0] ?? null)}
          />
        )}
      </Field>
      {state.kind === 'sending' && <UploadBar sent={state.progress.sent} total={state.progress.total} />}
      {state.kind === 'done' && (
        <>
          <UploadBar sent={state.size} total={state.size} />
          <Notice kind="ok">
            Uploaded the package of {state.app} ({formatBytes(state.size)}).
          </Notice>
        </>
      )}
      <ErrorNote message={state.kind === 'failed' ? state.message : null} testId="upload-error" />
      <FormActions>
        <Button type="submit" variant="primary" busy={sending} busyLabel="Uploading…">
          Upload package
        </Button>
      </FormActions>
    </form>
  );
}

function UploadBar(props: { sent: number; total: number }) {
  const percent = Math.min(100, Math.floor((props.sent * 100) / Math.max(props.total, 1)));
  return (
    <div className="push-progress">
      <progress data-testid="upload-progress" max={Math.max(props.total, 1)} value={Math.min(props.sent, props.total)} aria-label="Bytes uploaded" />
      <span className="muted small" data-testid="upload-percent">
        {formatBytes(props.sent)} of {formatBytes(props.total)} sent ({percent}%)
      </span>
    </div>
  );
}
