/**
 * Installs the brand's signed Android package on a USB-connected device, from the browser:
 * pick the device, authorise this browser on it, stream the package onto it, install, report.
 * Says first what is missing (no package uploaded yet, the role to upload one), and lets a
 * superadmin upload the package (DevicePackages.tsx).
 */
import { useMemo, useRef, useState, type FormEvent } from 'react';
import AdbWebCredentialStore from '@yume-chan/adb-credential-web';
import type { Adb } from '@yume-chan/adb';
import type { AdbDaemonWebUsbDevice } from '@yume-chan/adb-daemon-webusb';
import { apks, getPlatform, type Platform, type Session } from '../lib/api.ts';
import { ApiError, messageOf } from '../lib/http.ts';
import { useLoad } from '../lib/hooks.ts';
import {
  AdbAuthorisationError,
  APP_NAME,
  ApkPushError,
  authorise,
  DEFAULT_AUTHORISE_TIMEOUT_MS,
  installApk,
  type InstallProgress,
  type InstallResult,
} from '../lib/adb-install.ts';
import { checkApk, downloadApk } from '../lib/apk-download.ts';
import { closeDevice, DeviceError, openDevice, pickDevice, webUsbSupport } from '../lib/webusb.ts';
import { Button, ErrorNote, Field, FormActions, Loading, Notice, PageHeader, StaticField } from '../components/ui.tsx';
import { MissingNote, Packages } from './DevicePackages.tsx';

type Step =
  | { kind: 'idle' }
  | { kind: 'picking' }
  | { kind: 'authorising'; device: string }
  | { kind: 'pushing'; device: string; pushed: number; total: number | null }
  | { kind: 'installing'; device: string }
  | { kind: 'cleanup'; device: string }
  | { kind: 'done'; device: string; app: string; result: InstallResult }
  | { kind: 'failed'; reason: string; message: string };

const STEPS: { kind: Step['kind']; label: string }[] = [
  { kind: 'picking', label: 'Pick the device' },
  { kind: 'authorising', label: 'Allow USB debugging on it' },
  { kind: 'pushing', label: 'Copy the package' },
  { kind: 'installing', label: 'Install' },
];

export function Devices(props: { session: Session }) {
  const roles = props.session.roles;
  if (!roles.includes('admin') && !roles.includes('superadmin')) {
    return (
      <section>
        <PageHeader title="Devices" />
        <Notice kind="warn" role="alert" testId="devices-needs-admin">
          Installing the Android app needs the admin role, which your wallet <span className="mono break">{props.session.wallet}</span>{' '}
          lacks. Ask a superadmin to grant it (superadmins are the wallets listed in the server&apos;s{' '}
          <code>SUPERADMIN_WALLETS</code> setting).
        </Notice>
      </section>
    );
  }
  return <Installer session={props.session} />;
}

function Installer(props: { session: Session }) {
  const platform = useLoad(getPlatform);
  const support = useMemo(webUsbSupport, []);
  return (
    <section>
      <PageHeader title="Devices" subtitle="Install the brand's Android app on a device connected to this computer by USB." />
      {!support.ok && (
        <Notice kind="error" testId="webusb-unavailable" data-reason={support.reason}>
          {support.message}
        </Notice>
      )}
      {platform.loading && platform.data === null && <Loading what="the brand" />}
      <ErrorNote message={platform.error} />
      {platform.data !== null && <Ready platform={platform.data} session={props.session} webUsb={support.ok} />}
    </section>
  );
}

/** Once the brand is known: what is missing, the install form, and the packages. */
function Ready(props: { platform: Platform; session: Session; webUsb: boolean }) {
  const [apps, setApps] = useState<string[]>(() => [props.platform.brandKey]);
  const list = useLoad(() => apks.list(apps), [apps.join(',')]);
  const { reload } = list;
  const onUploaded = (app: string) => {
    if (apps.includes(app)) reload();
    else setApps([...apps, app]);
  };
  return (
    <>
      <MissingNote list={list.data} platform={props.platform} session={props.session} />
      <InstallForm platform={props.platform} session={props.session} webUsb={props.webUsb} />
      <Packages list={list} platform={props.platform} onUploaded={onUploaded} />
    </>
  );
}

function InstallForm(props: { platform: Platform; session: Session; webUsb: boolean }) {
  const { platform, session } = props;
  const pickAny = session.roles.includes('superadmin') && platform.containerType === 'platform';
  const [brand, setBrand] = useState(platform.brandKey);
  const [brandError, setBrandError] = useState<string | null>(null);
  const [step, setStep] = useState<Step>({ kind: 'idle' });
  const lastPercent = useRef(-1);
  const busy = step.kind !== 'idle' && step.kind !== 'done' && step.kind !== 'failed';

  const onProgress = (device: string) => (p: InstallProgress) => {
    if (p.phase === 'push') {
      // One render per percent: a large package reports thousands of chunks.
      const percent = p.total === null || p.total === 0 ? Math.floor(p.pushed / 1_000_000) : Math.floor((p.pushed * 100) / p.total);
      if (percent === lastPercent.current) return;
      lastPercent.current = percent;
      setStep({ kind: 'pushing', device, pushed: p.pushed, total: p.total });
    } else if (p.phase === 'install') setStep({ kind: 'installing', device });
    else if (p.phase === 'cleanup') setStep((s) => (s.kind === 'installing' ? { kind: 'cleanup', device } : s));
  };

  const install = async (app: string, usb: USB) => {
    lastPercent.current = -1;
    setStep({ kind: 'picking' });
    // Checked while the picker is open: a missing package is reported before the device is touched.
    const preflight = checkApk(app).then(
      () => null,
      (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
    );
    let device: AdbDaemonWebUsbDevice | undefined;
    let adb: Adb | undefined;
    try {
      device = await pickDevice(usb);
      const refused = await preflight;
      if (refused !== null) throw refused;
      const name = device.name ?? device.serial;
      setStep({ kind: 'authorising', device: name });
      const connection = await openDevice(device);
      adb = await authorise({ serial: device.serial, connection, credentialStore: new AdbWebCredentialStore('Splitline admin') });
      const label = adb.banner.model ?? name;
      const download = await downloadApk(app);
      setStep({ kind: 'pushing', device: label, pushed: 0, total: download.total });
      const result = await installApk(adb, { app, apk: download.body, total: download.total, onProgress: onProgress(label) });
      setStep({ kind: 'done', device: label, app, result });
    } catch (err) {
      setStep({ kind: 'failed', ...explain(err) });
    } finally {
      await release(adb, device);
    }
  };

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const app = brand.trim();
    if (!APP_NAME.test(app)) {
      setBrandError('A brand key: 1 to 64 lowercase letters, digits or dashes');
      return;
    }
    setBrandError(null);
    const support = webUsbSupport();
    if (!support.ok) {
      setStep({ kind: 'failed', reason: support.reason, message: support.message });
      return;
    }
    void install(app, support.usb);
  };

  return (
    <div className="split-layout">
      <form className="card form" onSubmit={onSubmit} noValidate data-testid="install-form">
        <h2>Install the app</h2>
        {pickAny ? (
          <Field label="Brand" error={brandError} hint="Any brand key whose signed package has been uploaded">
            {(id, invalid) => (
              <input id={id} name="brand" value={brand} aria-invalid={invalid} disabled={busy} autoComplete="off" spellCheck={false} onChange={(e) => setBrand(e.target.value)} />
            )}
          </Field>
        ) : (
          <StaticField
            label="Brand"
            testId="fixed-brand"
            hint={
              platform.containerType === 'partner'
                ? 'This partner container serves only its own brand.'
                : "Admins install this container's brand; a superadmin can pick another."
            }
          >
            <strong className="mono">{platform.brandKey}</strong>
          </StaticField>
        )}
        <ol className="install-steps" aria-label="Steps">
          {STEPS.map((s) => (
            <li key={s.kind} className={`install-step install-step-${stateOf(s.kind, step)}`}>
              {s.label}
            </li>
          ))}
        </ol>
        {step.kind === 'authorising' && (
          <Notice>
            Unlock {step.device} and answer <strong>Allow USB debugging?</strong> with Allow. Tick “Always allow from this computer” to skip
            this next time. Waiting up to {DEFAULT_AUTHORISE_TIMEOUT_MS / 1000} s.
          </Notice>
        )}
        {step.kind === 'pushing' && <PushProgress pushed={step.pushed} total={step.total} device={step.device} />}
        {step.kind === 'installing' && <Notice>Installing on {step.device}…</Notice>}
        {step.kind === 'cleanup' && <Notice>Removing the temporary copy from {step.device}…</Notice>}
        {step.kind === 'done' && <Outcome device={step.device} app={step.app} result={step.result} />}
        {step.kind === 'failed' && (
          <Notice kind="error" testId="install-error" data-reason={step.reason}>
            {step.message}
          </Notice>
        )}
        <FormActions>
          <Button type="submit" variant="primary" disabled={!props.webUsb} busy={busy} busyLabel="Installing…">
            {step.kind === 'idle' ? 'Connect a device and install' : 'Install on a device'}
          </Button>
        </FormActions>
      </form>
      <aside className="card">
        <h2>Before you start</h2>
        <ul className="plain-list">
          <li>Use Chrome or Edge on a computer; the page must be on https or localhost.</li>
          <li>On the device, turn on Developer options and USB debugging, then connect it and unlock it.</li>
          <li>Stop any adb server on this computer (adb kill-server): only one program can hold the device.</li>
        </ul>
      </aside>
    </div>
  );
}

function stateOf(kind: Step['kind'], step: Step): 'todo' | 'active' | 'done' {
  const order = STEPS.map((s) => s.kind);
  if (step.kind === 'done') return 'done';
  const current = step.kind === 'cleanup' ? order.indexOf('installing') : order.indexOf(step.kind);
  const mine = order.indexOf(kind);
  if (current === -1) return 'todo';
  return mine < current ? 'done' : mine === current ? 'active' : 'todo';
}

function megabytes(n: number): string {
  return `${(n / 1_000_000).toFixed(1)} MB`;
}

function PushProgress(props: { pushed: number; total: number | null; device: string }) {
  const { pushed, total } = props;
  const label =
    total === null
      ? `${megabytes(pushed)} copied to ${props.device}`
      : `${megabytes(pushed)} of ${megabytes(total)} copied to ${props.device} (${Math.floor((pushed * 100) / Math.max(total, 1))}%)`;
  return (
    <div className="push-progress">
      <progress data-testid="push-progress" max={total ?? undefined} value={total === null ? undefined : pushed} aria-label="Bytes copied to the device" />
      <span className="muted">{label}</span>
    </div>
  );
}

function Outcome(props: { device: string; app: string; result: InstallResult }) {
  const { result } = props;
  return (
    <div data-testid="install-result" data-ok={String(result.ok)}>
      {result.ok ? (
        <Notice kind="ok">
          Installed {props.app} on {props.device}.
        </Notice>
      ) : (
        <Notice kind="error">
          {props.device} did not install the package{result.exitCode === null ? '' : ` (pm exit code ${result.exitCode})`}. The package manager said:
        </Notice>
      )}
      {result.output !== '' && <pre className="pm-output" data-testid="pm-output">{result.output}</pre>}
      {result.cleanupError !== null && (
        <Notice kind="warn">
          The temporary copy {result.path} could not be removed: {result.cleanupError}
        </Notice>
      )}
    </div>
  );
}

/** Each failure as the person can act on it. */
function explain(err: unknown): { reason: string; message: string } {
  if (err instanceof DeviceError) return { reason: err.reason, message: err.message };
  if (err instanceof AdbAuthorisationError) {
    return err.reason === 'timeout'
      ? {
          reason: 'auth-timeout',
          message: `The device did not answer within ${DEFAULT_AUTHORISE_TIMEOUT_MS / 1000} s. Unlock it, answer “Allow USB debugging?” with Allow, and try again.`,
        }
      : {
          reason: 'auth-refused',
          message:
            'The device refused to authorise this browser. Try again and choose Allow on the device; if no prompt appears, ' +
            'revoke USB debugging authorisations in Developer options and reconnect.',
        };
  }
  if (err instanceof ApiError) return { reason: `download-${err.code}`, message: `The package could not be downloaded: ${err.message}` };
  if (err instanceof ApkPushError) return { reason: 'push', message: `The package could not be copied to the device: ${err.message}` };
  return { reason: 'unexpected', message: `The installation stopped: ${messageOf(err)}` };
}

/** Lets go of the device whatever happened, so the next attempt (or adb) can claim it. */
async function release(adb: Adb | undefined, device: AdbDaemonWebUsbDevice | undefined): Promise<void> {
  try {
    await adb?.close();
    if (device !== undefined) await closeDevice(device);
  } catch (err) {
    console.warn('releasing the USB device failed', err);
  }
}
