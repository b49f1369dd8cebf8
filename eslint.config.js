// typescript-eslint's recommended rules with type information, over the server, its tests, the
// scripts, the bench and the web app (each file checked with the tsconfig that owns it).
// `npm run lint`; `npm test` runs it (test/lint.test.ts).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'web/dist/**', 'node_modules/**', 'migrations/**', 'contracts/**', 'bench/results/**', '**/*.js', '**/*.cjs', '**/*.mjs'] },
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
);
