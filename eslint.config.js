// ESLint flat config (ESLint 10, typescript-eslint 8). Type-aware rules for every TypeScript file
// the project's tsconfig.json covers; plain recommended rules for the CommonJS .js files.
// Import layering is not checked here: scripts/check-layers.js does that (docs/adr/0027-layer-rules.md).
const { defineConfig, globalIgnores } = require('eslint/config');
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');

const TS_FILES = ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'migrations/**/*.ts', 'ormconfig.ts'];

/** Node's CommonJS globals for the .js files (the `globals` package is not a dependency). */
const NODE_COMMONJS_GLOBALS = Object.fromEntries(
  [
    'require',
    'module',
    'exports',
    '__dirname',
    '__filename',
    'process',
    'console',
    'Buffer',
    'URL',
    'URLSearchParams',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'setImmediate',
    'clearImmediate',
    'queueMicrotask',
    'structuredClone',
    'globalThis',
    'AbortController',
    'fetch',
  ].map((name) => [name, 'readonly']),
);

module.exports = defineConfig([
  globalIgnores(['dist/', 'coverage/', '.data/', 'test/fixtures/', '**/*.d.ts']),

  {
    name: 'agent-core/typescript',
    files: TS_FILES,
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: __dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          args: 'after-used',
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      // Catches un-awaited appends, commits and sends; `void promise` marks a deliberate fire-and-forget.
      '@typescript-eslint/no-floating-promises': 'error',
      // An async function without await is fine (interface conformance, returning a value as a promise).
      'require-await': 'off',
      '@typescript-eslint/require-await': 'off',
      // Numbers, booleans and types whose toString() is their canonical text; not objects, any or null.
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        {
          allowNumber: true,
          allowNullish: true,
          allowBoolean: true,
          allowAny: false,
          allowRegExp: false,
          allow: [
            { name: ['Error', 'URL', 'URLSearchParams'], from: 'lib' },
            { name: 'Decimal', from: 'package', package: 'decimal.js' },
          ],
        },
      ],
      // Passing a caught error or an AbortSignal reason through reject() is fine; reject('text') is not.
      '@typescript-eslint/prefer-promise-reject-errors': [
        'error',
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
      // Kept on from eslint:recommended (ESLint 10): `throw new X(msg, { cause: e })` when rethrowing.
      'preserve-caught-error': 'error',
    },
  },

  {
    // Function size and branching (ADR 0027): no function in src/ over 100 lines or complexity 20.
    // Blank lines and comments do not count: a comment says why, and that should never push a
    // function into being split. Tests, bench and generated code are not held to it.
    name: 'agent-core/function-size',
    files: ['src/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 100, skipBlankLines: true, skipComments: true }],
      complexity: ['error', 20],
    },
  },

  {
    name: 'agent-core/tests',
    files: ['test/**/*.ts'],
    rules: {
      // Tests poke at JSON, mocks and fixtures; `any` there is not a production hazard.
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },

  {
    name: 'agent-core/javascript',
    files: ['**/*.js', '**/*.cjs'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'commonjs', ecmaVersion: 2023, globals: NODE_COMMONJS_GLOBALS },
  },
]);
