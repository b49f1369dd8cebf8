/**
 * The web app checks every answer against its contract schema with TypeBox's interpreter, which
 * resolves a Type.Ref only through the shared schemas src/contract/check.ts lists: a schema given
 * an $id and referenced by $ref but missing there fails every answer that carries it ("Unable to
 * dereference schema"), as the admin app's new-order page once did for `Metadata`. Every $ref in
 * any contract module must name one of those shared schemas.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { REFERENCES } from '../../src/contract/check.ts';

const CONTRACT = path.join(import.meta.dirname, '../../src/contract');

function refsIn(value: unknown, out: Set<string>, seen = new Set<unknown>()): Set<string> {
  if (value === null || typeof value !== 'object' || seen.has(value)) return out;
  seen.add(value);
  for (const [k, v] of Object.entries(value)) {
    if (k === '$ref' && typeof v === 'string') out.add(v);
    else refsIn(v, out, seen);
  }
  return out;
}

test('every $ref in the contract names a schema the answer checker can resolve', async () => {
  const refs = new Set<string>();
  for (const file of readdirSync(CONTRACT).filter((f) => f.endsWith('.ts'))) {
    const mod = (await import(path.join(CONTRACT, file))) as Record<string, unknown>;
    for (const exported of Object.values(mod)) refsIn(exported, refs);
  }
  assert.ok(refs.size > 0, 'the contract references shared schemas');
  const known = new Set(REFERENCES.map((s) => s.$id));
  assert.deepEqual([...refs].filter((r) => !known.has(r)).sort(), [], 'referenced but not in src/contract/check.ts REFERENCES');
});
