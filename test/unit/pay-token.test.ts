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
