/**
 * The layers of src (docs/architecture.md "Layers"; LAYERS in eslint.config.js): the lint rule that
 * holds them fails on an import against them. Snippets are linted with that rule alone, as if they
 * sat in each folder and imported a real module of each other folder, so a rule that let an
 * upward or sideways import through, or let two folders import each other, fails here. The whole
 * tree passing the rule is test/lint.test.ts's check.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'node:test';
import { ESLint, type Linter } from 'eslint';
import tseslint from 'typescript-eslint';

const ROOT = path.resolve(import.meta.dirname, '../..');
const { LAYERS, LAYERS_CONFIG } = (await import(pathToFileURL(path.join(ROOT, 'eslint.config.js')).href)) as {
  LAYERS: string[][];
  LAYERS_CONFIG: Linter.Config;
};

const eslint = new ESLint({
  cwd: ROOT,
  overrideConfigFile: true,
  overrideConfig: [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } }, LAYERS_CONFIG],
});

const FOLDERS = LAYERS.flat();

/** The folder of src an element type names: the src files themselves for the composition on top. */
const dirOf = (folder: string): string => (folder === 'root' ? 'src' : path.join('src', folder));

/** A real module of the folder, for a snippet to import (the rule resolves what it imports). */
function moduleIn(folder: string): string {
  const name = readdirSync(path.join(ROOT, dirOf(folder))).filter((f) => f.endsWith('.ts')).sort()[0];
  assert.ok(name !== undefined, `src/${folder} has a module`);
  return path.join(dirOf(folder), name);
}

/** The layers rule's messages for a snippet in `from` that imports a module of `to`. */
async function lintImport(from: string, to: string, kind: 'value' | 'type'): Promise<string[]> {
  const file = path.join(dirOf(from), 'layer-probe.ts');
  let spec = path.relative(path.dirname(file), moduleIn(to)).split(path.sep).join('/');
  if (!spec.startsWith('.')) spec = `./${spec}`;
  const code = kind === 'value' ? `import * as probe from '${spec}';\nexport const seen = probe;\n` : `import type * as probe from '${spec}';\nexport type Seen = typeof probe;\n`;
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  assert.ok(result !== undefined);
  const fatal = result.messages.filter((m) => m.fatal === true);
  assert.deepEqual(fatal, [], `the snippet in ${file} parses`);
  return result.messages.filter((m) => m.ruleId === 'boundaries/dependencies').map((m) => m.message);
}

const layerOf = (folder: string): number => LAYERS.findIndex((layer) => layer.includes(folder));

test('every folder of src sits in exactly one layer, and every layer names a folder that exists', () => {
  assert.equal(new Set(FOLDERS).size, FOLDERS.length, 'no folder in two layers');
  const folders = readdirSync(path.join(ROOT, 'src'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
  assert.deepEqual([...folders].sort(), FOLDERS.filter((f) => f !== 'root').sort());
});

test('a value import is let through downwards only; no two folders may import each other', { timeout: 120_000 }, async () => {
  const allowed = new Set<string>();
  for (const from of FOLDERS) {
    for (const to of FOLDERS) {
      if (from === to) continue;
      const messages = await lintImport(from, to, 'value');
      const down = layerOf(to) > layerOf(from);
      assert.equal(messages.length === 0, down, `${from} -> ${to}: ${down ? 'downwards, let through' : 'against the layers, refused'} (${messages.join('; ') || 'no message'})`);
      if (messages.length === 0) allowed.add(`${from}->${to}`);
    }
  }
  const both = [...allowed].filter((pair) => {
    const [from, to] = pair.split('->');
    return allowed.has(`${to}->${from}`);
  });
  assert.deepEqual(both, [], 'folders that may import each other');
});

test('the refusal names the rule and the layers; a real upward import fails (the store reaching up into the rules)', async () => {
  const [result] = await eslint.lintText("import { nextStatus } from '../domain/receipt-states.ts';\nexport const next = nextStatus;\n", {
    filePath: path.join(ROOT, 'src/db/layer-probe.ts'),
  });
  assert.ok(result !== undefined);
  assert.deepEqual(
    result.messages.map((m) => [m.ruleId, m.severity]),
    [['boundaries/dependencies', 2]],
  );
  assert.match(result.messages[0]!.message, /layers/);
});

test('a type-only import is let through either way: it is erased before the code runs', async () => {
  assert.deepEqual(await lintImport('db', 'domain', 'type'), []);
  assert.deepEqual(await lintImport('http', 'root', 'type'), []);
});
