/**
 * The devices page in headless chromium: who may use it, what it says up front is missing (no
 * package uploaded yet; the superadmin role, granted by SUPERADMIN_WALLETS, to upload one), a
 * superadmin's upload with its progress bar, what it says when WebUSB cannot work (another
 * browser, or a page that is not https or localhost), and when no device is picked. The install
 * itself is covered against a scripted device in test/unit/adb-install.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { admin, newAccount, signIn, type Session } from '../helpers/session.ts';
import { CHROMIUM, screenshot, signInThroughPage, skipReason, startHarness, type Harness, type Merchant } from './harness.ts';

if (skipReason) console.log(skipReason);

const APK = 'application/vnd.android.package-archive';
const superAccount = newAccount();

/** Run before the page's scripts: the picker closes with nothing chosen, as when no device is connected. */
const NO_DEVICE = `USB.prototype.requestDevice = function () {
  return Promise.reject(new DOMException('No device selected.', 'NotFoundError'));
};`;
/** A browser without WebUSB, as Firefox or Safari. */
const NO_WEBUSB = `Object.defineProperty(Navigator.prototype, 'usb', { configurable: true, get: () => undefined });`;

async function uploadApk(h: Harness, s: Session, app: string): Promise<void> {
  const body = Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), Buffer.alloc(4096, 7)]);
  const res = await h.t.app.inject({
    method: 'PUT',
    url: `/api/admin/apk/${app}`,
    payload: body,
    headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken, 'content-type': APK },
  });
  assert.equal(res.statusCode, 200, res.body);
}

function noProblems(m: Merchant) {
  assert.deepEqual(m.problems, [], 'no script errors or CSP violations');
}

/** Nothing scrolls sideways: the document is no wider than the screen. */
async function fits(m: Merchant, what: string): Promise<void> {
  const { scrollWidth, innerWidth } = await m.page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
  assert.ok(scrollWidth <= innerWidth, `${what}: the page is ${scrollWidth}px wide on a ${innerWidth}px screen`);
}

const WIDTHS = [
  { name: 'desktop', phone: false },
  { name: 'phone', phone: true },
] as const;

describe('devices page on a platform container', { skip: skipReason, timeout: 120_000 }, () => {
  let h: Harness;
  let sup: Session;
  const adminAccount = newAccount();

  before(async () => {
    h = await startHarness({ SUPERADMIN_WALLETS: superAccount.address, BRAND_KEY: 'acme' });
    sup = await signIn(h.t, superAccount);
    const granted = await admin(h.t, sup, 'POST', '/api/admin/roles', { wallet: adminAccount.address, role: 'admin' });
    assert.equal(granted.status, 200, JSON.stringify(granted.body));
    await uploadApk(h, sup, 'acme');
  });
  after(async () => {
    await h?.close();
  });

  async function openAs(account: ReturnType<typeof newAccount> | undefined, initScript?: string, phone = false): Promise<Merchant> {
    const m = await h.open(account === undefined ? { phone } : { account, phone });
    if (initScript !== undefined) await m.context.addInitScript({ content: initScript });
    await signInThroughPage(m);
    return m;
  }

  test('an owner without the admin role: no Devices link, and the page says admin is needed', async () => {
    const m = await openAs(undefined);
    assert.equal(await m.page.getByRole('navigation').getByRole('link', { name: 'Devices' }).count(), 0);
    await m.page.goto('/admin/devices');
    const note = m.page.getByTestId('devices-needs-admin');
    await note.waitFor();
    assert.match(await note.innerText(), /needs the admin role/);
    assert.match(await note.innerText(), /SUPERADMIN_WALLETS/);
    assert.equal(await m.page.getByTestId('install-form').count(), 0);
    noProblems(m);
  });

  test('no device connected: the picker closes empty and the page says how to connect one', async () => {
    const m = await openAs(adminAccount, NO_DEVICE);
    await m.page.getByRole('navigation').getByRole('link', { name: 'Devices' }).click();
    await m.page.getByTestId('install-form').waitFor();
    assert.equal(await m.page.getByTestId('webusb-unavailable').count(), 0, 'chromium on 127.0.0.1 has WebUSB');
    assert.equal(await m.page.evaluate(() => (document as any).featurePolicy.allowsFeature('usb')), true, 'the page headers allow WebUSB');
    const fixed = m.page.getByTestId('fixed-brand');
    assert.match(await fixed.innerText(), /acme/, 'an admin installs the container brand');
    assert.equal(await m.page.getByLabel('Brand', { exact: true }).count(), 0, 'only a superadmin picks the brand');
    assert.equal(await m.page.getByTestId('devices-missing').count(), 0, 'the package is there: nothing is missing');
    assert.match(await m.page.getByTestId('upload-needs-superadmin').innerText(), /SUPERADMIN_WALLETS/);
    assert.equal(await m.page.getByTestId('upload-form').count(), 0, 'only a superadmin uploads');

    await m.page.getByRole('button', { name: 'Connect a device and install' }).click();
    const error = m.page.getByTestId('install-error');
    await error.waitFor();
    assert.equal(await error.getAttribute('data-reason'), 'no-device');
    assert.match(await error.innerText(), /No device was selected\. Connect the Android device by USB, turn on USB debugging/);
    assert.equal(await m.page.getByRole('button', { name: 'Install on a device' }).isEnabled(), true, 'ready to try again');
    await screenshot(m.page, 'devices-no-device');
    noProblems(m);
  });

  test('a browser without WebUSB: the page says which browser to use, and the button is off', async () => {
    const m = await openAs(adminAccount, NO_WEBUSB);
    await m.page.goto('/admin/devices');
    const note = m.page.getByTestId('webusb-unavailable');
    await note.waitFor();
    assert.equal(await note.getAttribute('data-reason'), 'unsupported');
    assert.match(await note.innerText(), /This browser has no WebUSB\. Use Chrome, Edge or another Chromium-based browser/);
    assert.equal(await m.page.getByRole('button', { name: 'Connect a device and install' }).isDisabled(), true);
    await screenshot(m.page, 'devices-no-webusb');
    noProblems(m);
  });

  test('a superadmin picks the brand, checked as a brand key', async () => {
    const m = await openAs(superAccount, NO_DEVICE);
    await m.page.goto('/admin/devices');
    const brand = m.page.getByLabel('Brand', { exact: true });
    assert.equal(await brand.inputValue(), 'acme');
    await brand.fill('Not A Brand!');
    await m.page.getByRole('button', { name: 'Connect a device and install' }).click();
    await m.page.getByText('A brand key: 1 to 64 lowercase letters, digits or dashes').waitFor();
    assert.equal(await m.page.getByTestId('install-error').count(), 0, 'nothing was attempted');
    await brand.fill('other-brand');
    await m.page.getByRole('button', { name: 'Connect a device and install' }).click();
    assert.equal(await m.page.getByTestId('install-error').getAttribute('data-reason'), 'no-device');
    await screenshot(m.page, 'devices-superadmin');
    noProblems(m);
  });

  for (const width of WIDTHS) {
    test(`${width.name}: a superadmin uploads a package, the progress bar reaches 100%, and the package is listed`, async () => {
      const m = await openAs(superAccount, NO_DEVICE, width.phone);
      await m.page.goto('/admin/devices');
      const packages = m.page.getByTestId('apk-packages');
      await packages.locator('[data-testid="apk-package"][data-app="acme"][data-stored="true"]').waitFor();
      const app = `fresh-${width.name}`;
      const form = m.page.getByTestId('upload-form');
      await form.getByLabel('Brand of the package').fill(app);
      // Big enough that the browser reports the upload in several steps.
      const bytes = Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), Buffer.alloc(3_000_000, 9)]);
      await form.getByLabel('Signed APK').setInputFiles({ name: `${app}.apk`, mimeType: APK, buffer: bytes });
      await form.getByRole('button', { name: 'Upload package' }).click();
      await form.getByText(`Uploaded the package of ${app} (3.0 MB).`).waitFor({ timeout: 30_000 });
      const progress = form.getByTestId('upload-progress');
      assert.equal(await progress.getAttribute('value'), String(bytes.length));
      assert.equal(await progress.getAttribute('max'), String(bytes.length));
      assert.match(await form.getByTestId('upload-percent').innerText(), /\(100%\)$/);
      const listed = packages.locator(`[data-testid="apk-package"][data-app="${app}"][data-stored="true"]`);
      await listed.waitFor();
      assert.match(await listed.innerText(), /signed package, 3\.0 MB, uploaded /);
      const stored = await h.t.app.inject({ method: 'GET', url: `/api/admin/apk/${app}`, headers: { cookie: sup.cookie } });
      assert.equal(stored.statusCode, 200);
      assert.ok(stored.rawPayload.equals(bytes), 'the stored package is the file uploaded');
      await fits(m, 'the devices page after an upload');
      await screenshot(m.page, `devices-upload-${width.name}`);
      noProblems(m);
    });
  }

  test('the upload refuses a file that is not an APK, saying why', async () => {
    const m = await openAs(superAccount, NO_DEVICE);
    await m.page.goto('/admin/devices');
    const form = m.page.getByTestId('upload-form');
    await form.getByLabel('Brand of the package').fill('not-a-zip');
    await form.getByLabel('Signed APK').setInputFiles({ name: 'notes.apk', mimeType: APK, buffer: Buffer.from('hello, not a zip archive') });
    await form.getByRole('button', { name: 'Upload package' }).click();
    const error = form.getByTestId('upload-error');
    await error.waitFor();
    assert.match(await error.innerText(), /The package was not uploaded: The upload is not an APK/);
    assert.equal(await m.page.locator('[data-testid="apk-package"][data-app="not-a-zip"]').count(), 0);
    noProblems(m);
  });

  test('a page that is not https or localhost: the page says so (real insecure origin)', async () => {
    // A host name mapped to the loopback server: the same app, but an http origin that is not
    // potentially trustworthy, where chromium hides navigator.usb.
    const port = new URL(h.base).port;
    const browser: Browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--host-resolver-rules=MAP devices.test 127.0.0.1'],
      timeout: 30_000,
    });
    let context: BrowserContext | undefined;
    try {
      const origin = `http://devices.test:${port}`;
      context = await browser.newContext({ baseURL: origin });
      const session = await signIn(h.t, adminAccount);
      const [name, value] = session.cookie.split('=') as [string, string];
      await context.addCookies([{ name, value, url: origin, httpOnly: true, sameSite: 'Lax' }]);
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(err.message));
      await page.goto('/admin/devices');
      const note = page.getByTestId('webusb-unavailable');
      await note.waitFor({ timeout: 10_000 });
      assert.equal(await note.getAttribute('data-reason'), 'insecure');
      assert.match(await note.innerText(), /needs a secure page: open this site over https, or on localhost\. This page was loaded from http:\/\/devices\.test:\d+/);
      await screenshot(page, 'devices-insecure');
      // Without a secure page there is no crypto.randomUUID; a POST still carries an Idempotency-Key.
      assert.equal(await page.evaluate(() => typeof (crypto as { randomUUID?: unknown }).randomUUID), 'undefined');
      const logout = page.waitForRequest((req) => req.method() === 'POST' && req.url().endsWith('/api/auth/logout'));
      await page.getByRole('button', { name: 'Sign out' }).click();
      assert.match((await logout).headers()['idempotency-key'] ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      await page.getByText('You are signed out.').waitFor();
      assert.deepEqual(errors, []);
    } finally {
      await context?.close();
      await browser.close();
    }
  });
});

describe('devices page on a partner container with no package uploaded', { skip: skipReason, timeout: 120_000 }, () => {
  let h: Harness;
  const partnerAdmin = newAccount();
  before(async () => {
    h = await startHarness({ SUPERADMIN_WALLETS: superAccount.address, CONTAINER_TYPE: 'partner', BRAND_KEY: 'partner-co' });
    const sup = await signIn(h.t, superAccount);
    const granted = await admin(h.t, sup, 'POST', '/api/admin/roles', { wallet: partnerAdmin.address, role: 'admin' });
    assert.equal(granted.status, 200, JSON.stringify(granted.body));
  });
  after(async () => {
    await h?.close();
  });

  test('even a superadmin sees only the container brand', async () => {
    const m = await h.open({ account: superAccount });
    await signInThroughPage(m);
    await m.page.goto('/admin/devices');
    const fixed = m.page.getByTestId('fixed-brand');
    await fixed.waitFor();
    assert.match(await fixed.innerText(), /partner-co/);
    assert.match(await fixed.innerText(), /serves only its own brand/);
    assert.equal(await m.page.getByLabel('Brand', { exact: true }).count(), 0);
    const missing = m.page.getByTestId('devices-missing');
    await missing.waitFor();
    assert.match(await missing.innerText(), /No package uploaded yet for brand partner-co/);
    assert.match(await missing.innerText(), /You are a superadmin: upload it under Packages below/);
    const form = m.page.getByTestId('upload-form');
    assert.match(await form.innerText(), /Brand partner-co \(this partner container's own\)/);
    assert.equal(await form.getByLabel('Brand of the package').count(), 0, 'a partner uploads only its own brand');
    noProblems(m);
  });

  for (const width of WIDTHS) {
    test(`${width.name}: an admin is told up front that no package is uploaded and that uploading needs SUPERADMIN_WALLETS`, async () => {
      const m = await h.open({ account: partnerAdmin, phone: width.phone });
      await signInThroughPage(m);
      await m.page.goto('/admin/devices');
      const missing = m.page.getByTestId('devices-missing');
      await missing.waitFor();
      const text = await missing.innerText();
      assert.match(text, /^No package uploaded yet for brand partner-co: there is nothing to install until a superadmin uploads the signed APK\./);
      assert.match(await missing.getByTestId('devices-needs-superadmin').innerText(), /lacks the superadmin role[\s\S]*SUPERADMIN_WALLETS/);
      assert.ok(text.includes(m.wallet), 'it names the wallet');
      const box = await missing.boundingBox();
      const installForm = await m.page.getByTestId('install-form').boundingBox();
      assert.ok(box !== null && installForm !== null && box.y < installForm.y, 'said before the install form');
      assert.equal(await m.page.getByTestId('upload-form').count(), 0);
      await m.page.locator('[data-testid="apk-package"][data-app="partner-co"][data-stored="false"]').waitFor();
      await fits(m, 'the devices page with nothing uploaded');
      await screenshot(m.page, `devices-missing-${width.name}`);
      noProblems(m);
    });
  }
});
