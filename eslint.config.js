// typescript-eslint's recommended rules with type information, over the server, its tests, the
// scripts, the bench and the web app (each file checked with the tsconfig that owns it).
// `npm run lint`; `npm test` runs it (test/lint.test.ts).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import boundaries from 'eslint-plugin-boundaries';

// The layers of src (docs/architecture.md "Layers", issue 26 item 3), top to bottom. A folder
// imports only from the layers below its own: never from its own layer's other folders, never
// upwards. So no import runs back up and no two folders import each other. The process entries and
// the composition (src/*.ts: main, app, deps, the CLIs, config, logger) sit on top.
export const LAYERS = [
  ['root'],
  ['http'],
  ['auth'],
  ['gateway', 'journal', 'payments'],
  ['domain'],
  ['webhooks'],
  ['workers', 'chain', 'storage'],
  ['db'],
  ['lib'],
  ['contract'],
];

/** The boundaries/dependencies policies for LAYERS: each folder may import the layers below it. */
function layerPolicies() {
  return LAYERS.flatMap((layer, i) => {
    const below = LAYERS.slice(i + 1).flat();
    return layer.map((type) => ({ from: { element: { type } }, allow: { to: { element: { types: below } } } }));
  });
}

/** The rule that holds every file of src to LAYERS; test/unit/layers.test.ts lints snippets with it alone. */
export const LAYERS_CONFIG = {
  // The layers (LAYERS above). A type-only import is let through in any direction: it is erased
  // when the code runs, so it orders no module loading and makes no cycle; the routes take the
  // composition's Deps type (src/deps.ts) that way, and a layer names the shapes above it that
  // it is handed (a pricing line, a transition) without calling into that layer.
  files: ['src/**/*.ts'],
  plugins: { boundaries },
  settings: {
    'boundaries/elements': [
      // The first descriptor that matches a file names its element, so src itself comes last.
      ...LAYERS.flat().filter((type) => type !== 'root').map((type) => ({ type, pattern: `src/${type}`, partialMatch: false })),
      { type: 'root', pattern: 'src', partialMatch: false },
    ],
  },
  rules: {
    'boundaries/dependencies': [
      'error',
      {
        default: 'disallow',
        message: 'Imports run down the layers only (docs/architecture.md, "Layers"; LAYERS in eslint.config.js).',
        policies: [
          ...layerPolicies(),
          { from: { element: { types: LAYERS.flat() } }, allow: { dependency: { kind: 'type' } } },
        ],
      },
    ],
  },
};

// The HTTP boundary (docs/architecture.md "The HTTP boundary", issue 26 item 3): route handlers and
// the rest of the HTTP layer reach the database only through the stores (src/db/*-store.ts, the
// app's createStores in src/db/stores.ts, handed over as deps.stores) and the domain services,
// never through the machinery below them. Each group is one kind of machinery; a file listed in
// HTTP_DB_EXCEPTIONS is allowed only the groups named there, and every other group still holds.
const DB_MACHINERY = {
  drizzle: {
    group: ['drizzle-orm', 'drizzle-orm/*', 'pg', 'pg/*', '@electric-sql/pglite', '@electric-sql/pglite/*'],
    message: 'HTTP code builds no query: call a store (deps.stores) or a domain service (docs/architecture.md, "The HTTP boundary").',
  },
  schema: {
    group: ['**/db/schema', '**/db/schema.*'],
    message: 'HTTP code reads no table directly: call a store (deps.stores) or a domain service (docs/architecture.md, "The HTTP boundary").',
  },
  client: {
    group: ['**/db/client', '**/db/client.*'],
    message: 'HTTP code holds no database handle: call a store (deps.stores) or a domain service (docs/architecture.md, "The HTTP boundary").',
  },
  // Everything else in src/db (statements, batchers, counters, views, claims) except the stores.
  other: {
    group: ['**/db/*', '!**/db/*-store', '!**/db/*-store.*', '!**/db/stores', '!**/db/stores.*', '!**/db/schema', '!**/db/schema.*', '!**/db/client', '!**/db/client.*'],
    message: 'Only the stores (src/db/*-store.ts, src/db/stores.ts) are open to HTTP code; the rest of src/db is their machinery (docs/architecture.md, "The HTTP boundary").',
  },
};

/** The rule for a file of the HTTP layer, allowed the named groups of DB_MACHINERY and no other. */
function httpDbBoundary(allowed = []) {
  const patterns = Object.entries(DB_MACHINERY)
    .filter(([name]) => !allowed.includes(name))
    .map(([, pattern]) => pattern);
  return { 'no-restricted-imports': ['error', { patterns }] };
}

const HTTP_LAYER = ['src/app.ts', 'src/http/**/*.ts'];

// What still crosses the boundary today: each file, the machinery it may still import, and why.
// Remove an entry when its file goes behind a store or a service; add none.
const HTTP_DB_EXCEPTIONS = [
  // Idempotency keys have no store: the plugin reads and writes idempotency_keys itself and tells
  // a database that is away (isDbDown) from a stored answer (issue 26 item 1: a store per table).
  { files: ['src/http/idempotency.ts'], allow: ['drizzle', 'schema', 'client'] },
  // GET /healthz reads the chain worker's cursor (chain_cursors) with its own query; the scanner,
  // reconcile and early-money each read it the same way, and none is a store yet (issue 26 item 4).
  { files: ['src/http/routes/health.ts'], allow: ['drizzle', 'schema'] },
  // GET /api/admin/rejected-writes lists rejected_writes with its own query; the journal, which
  // writes those rows (src/journal/entries.ts recordRejection), has no read for them yet (issue 26 item 4).
  { files: ['src/http/routes/admin/rejected-writes.ts'], allow: ['drizzle', 'schema'] },
];

export default tseslint.config(
  // packages/sdk/src/openapi.ts is generated from the OpenAPI document (scripts/sdk-types.ts).
  { ignores: ['dist/**', 'web/dist/**', 'node_modules/**', 'migrations/**', 'contracts/**', 'bench/results/**', 'packages/sdk/dist/**', 'packages/sdk/src/openapi.ts', '**/*.js', '**/*.cjs', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // node:test's test() and describe() return promises that the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }] },
      ],
      // `_`-prefixed names are deliberately unused (a parameter a signature requires).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // A `let` assigned once, after a callback that reads it was made (the journal's slot holds the
      // promise whose callback marks that slot), cannot be a const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // Tests read answers as parsed JSON (`res.body`), which the typed test client checks at
    // run time against the published schema of the route (test/helpers/contract.ts) rather than
    // by a static type; the rules about values of type any would flag every such read.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      // Test doubles stand in for asynchronous dependencies (a commit, a worker's pass, a key check,
      // a route, a probe polled by waitFor) and are async for that reason even when they await
      // nothing: what they throw must reach the code under test as a rejection, as the real one's would.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // The HTTP boundary (above): every file of the HTTP layer, then the exceptions, each allowed
    // only what its entry names.
    files: HTTP_LAYER,
    rules: httpDbBoundary(),
  },
  ...HTTP_DB_EXCEPTIONS.map(({ files, allow }) => ({ files, rules: httpDbBoundary(allow) })),
  LAYERS_CONFIG,
);
