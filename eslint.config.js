// Lint for the whole repository: typescript-eslint's recommended rules, no type information
// (fast enough for every commit). `npm run lint` must pass with zero warnings.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', 'data/**', '.venv/**', 'eval/results.json', 'bench/results.json', '.cache/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
);
