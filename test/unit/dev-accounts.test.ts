import assert from 'node:assert/strict';
import { test } from 'node:test';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { DEV_PLATFORM_RECIPIENT, loadConfig } from '../../src/config.ts';

test('the dev platform recipient is the ninth account of the test mnemonic', () => {
  assert.equal(DEV_PLATFORM_RECIPIENT, devAccount(8).address.toLowerCase());
});

test('CHAIN=dev without PLATFORM_RECIPIENT_ADDRESS: the ninth test account; set, or another chain: as configured', () => {
  const dev = loadConfig({ CHAIN: 'dev' });
  assert.equal(dev.platformRecipientAddress, DEV_PLATFORM_RECIPIENT);
  assert.equal(dev.platformRecipientIsDevDefault, true);
  const set = loadConfig({ CHAIN: 'dev', PLATFORM_RECIPIENT_ADDRESS: '0x000000000000000000000000000000000000BEEF' });
  assert.equal(set.platformRecipientAddress, '0x000000000000000000000000000000000000beef');
  assert.equal(set.platformRecipientIsDevDefault, false);
  const base = loadConfig({ CHAIN: 'base', RPC_URL: 'http://127.0.0.1:9' });
  assert.equal(base.platformRecipientAddress, undefined, 'no default outside the dev chain');
});
