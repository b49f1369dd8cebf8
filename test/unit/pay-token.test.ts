/**
 * Pay tokens come from a block of random bytes: each is 128 bits no other token shares, across
 * block refills.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newPayToken } from '../../src/domain/receipts.ts';

test('pay tokens are 22 base64url characters (128 bits), all distinct across several blocks', () => {
  const seen = new Set<string>();
  // 256 tokens a block: this crosses ten refills.
  for (let i = 0; i < 2600; i++) {
    const token = newPayToken();
    assert.match(token, /^[A-Za-z0-9_-]{22}$/);
    assert.equal(Buffer.from(token, 'base64url').length, 16);
    seen.add(token);
  }
  assert.equal(seen.size, 2600);
});

test('the bytes look uniform: every byte value turns up, none far more than its share', () => {
  const counts = new Array<number>(256).fill(0);
  const tokens = 4096;
  for (let i = 0; i < tokens; i++) for (const b of Buffer.from(newPayToken(), 'base64url')) counts[b]!++;
  const expected = (tokens * 16) / 256;
  assert.ok(Math.min(...counts) > expected / 2, `rarest byte ${Math.min(...counts)} of ~${expected}`);
  assert.ok(Math.max(...counts) < expected * 2, `commonest byte ${Math.max(...counts)} of ~${expected}`);
});

test('an API receipt\'s token is derived from the secret, the merchant and the id: the same on every instance and attempt, unguessable without the secret', async () => {
  const { payTokenFor } = await import('../../src/domain/receipts.ts');
  const secret = new TextEncoder().encode('a'.repeat(32));
  const wallet = '0x1111111111111111111111111111111111111111';
  const token = payTokenFor(secret, wallet, '1001');
  assert.match(token, /^[A-Za-z0-9_-]{22}$/);
  assert.equal(payTokenFor(secret, wallet.toUpperCase().replace('0X', '0x'), '1001'), token, 'the wallet is compared in lower case');
  assert.notEqual(payTokenFor(secret, wallet, '1002'), token);
  assert.notEqual(payTokenFor(secret, '0x2222222222222222222222222222222222222222', '1001'), token, 'another merchant, same id');
  assert.notEqual(payTokenFor(new TextEncoder().encode('b'.repeat(32)), wallet, '1001'), token, 'another secret');
});
