// Thin lint layer: the compiler carries strictness; these rules catch what it does not.
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');

module.exports = tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'coverage/**', 'bench/results/**', 'bench/.cache/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
        process: 'readonly',
        console: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    // A wire protocol is one folder of the gateway (packages/gateway/src/protocols/) plus its topic
    // family in core's config: nothing else in the server names one (docs/architecture.md,
    // "Protocol dialects"). Clients (the SDK, the console) speak the protocols and are not held to it.
    files: [
      'packages/core/src/**/*.ts',
      'packages/gateway/src/**/*.ts',
      'packages/account-api/src/**/*.ts',
      'packages/cli/src/**/*.ts',
    ],
    ignores: ['packages/gateway/src/protocols/**', 'packages/core/src/config/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'Literal[value=/^v[34]$/]',
          message:
            "A protocol is named only in packages/gateway/src/protocols/ and core's config (config/families.ts): go through its dialect or family.",
        },
        {
          selector: 'TemplateElement[value.raw=/^v[34]$/]',
          message:
            "A protocol is named only in packages/gateway/src/protocols/ and core's config (config/families.ts): go through its dialect or family.",
        },
      ],
    },
  },
  {
    files: ['**/*.js', 'bench/**', 'chaos/src/main.ts', 'packages/cli/src/**'],
    rules: { 'no-console': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
);
