// Lint for the whole repository: typescript-eslint's recommended rules, no type information
// (fast enough for every commit), and the boundaries between deployables. `npm run lint` must pass
// with zero warnings.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import tseslint from 'typescript-eslint';

const ROOT = path.dirname(fileURLToPath(import.meta.url));
/**
 * The deployables under apps/, by folder; each one's package is `@adp/<folder>`. The API serves
 * the dashboard by bundling its sources from a directory (DASHBOARD_DIR), importing none of it.
 */
const APPS = ['api', 'cli', 'dashboard', 'worker'];

/** `apps/<name>/...` of a path under the repository, else null. */
function appOf(file) {
  const parts = path.relative(ROOT, file).split(path.sep);
  return parts[0] === 'apps' && APPS.includes(parts[1]) ? parts[1] : null;
}

/**
 * No app imports another app, and nothing outside an app reaches into its folder: what two
 * deployables share lives in packages/ or pipelines/. Code in packages/ and pipelines/ imports no
 * app at all. The benchmarks and evaluations run an app through its package's public entry
 * (`@adp/api`), never its `src/`; the system tests under test/ are the one place that may.
 * Relative paths are resolved, so `../../api/src/x.js` is caught from any depth.
 */
const appBoundaries = {
  meta: {
    type: 'problem',
    docs: { description: 'no import from one app into another, and none into an app from outside it' },
    schema: [],
    messages: {
      appPackage: "apps/{{from}} imports the app @adp/{{to}}: move what both need into packages/ (an app imports no other app)",
      intoApp: "{{where}} reaches into apps/{{to}}: import a package (packages/, pipelines/) or the app's public entry instead",
      libraryImportsApp: '{{where}} imports the app @adp/{{to}}: packages and pipelines import no app',
    },
  },
  create(context) {
    const file = context.filename;
    const rel = path.relative(ROOT, file).split(path.sep);
    const top = rel[0];
    if (top === 'test' || top === 'node_modules') return {};
    const fromApp = appOf(file);
    const where = fromApp === null ? `${top}/` : `apps/${fromApp}`;
    function check(node, specifier) {
      if (typeof specifier !== 'string') return;
      const pkg = /^@adp\/([^/]+)/.exec(specifier)?.[1];
      if (pkg !== undefined && APPS.includes(pkg)) {
        if (fromApp === pkg) return;
        if (fromApp !== null) {
          context.report({ node, messageId: 'appPackage', data: { from: fromApp, to: pkg } });
        } else if (top === 'packages' || top === 'pipelines') {
          context.report({ node, messageId: 'libraryImportsApp', data: { where, to: pkg } });
        }
        return;
      }
      if (!specifier.startsWith('.')) return;
      const to = appOf(path.resolve(path.dirname(file), specifier));
      if (to !== null && to !== fromApp) context.report({ node, messageId: 'intoApp', data: { where, to } });
    }
    const source = (node) => check(node.source, node.source?.value);
    return {
      ImportDeclaration: source,
      ExportNamedDeclaration: source,
      ExportAllDeclaration: source,
      ImportExpression: (node) => check(node.source, node.source.type === 'Literal' ? node.source.value : undefined),
    };
  },
};

export default tseslint.config(
  { ignores: ['**/node_modules/**', 'data/**', '.venv/**', 'eval/results.json', 'bench/results.json', '.cache/**'] },
  ...tseslint.configs.recommended,
  {
    plugins: { adp: { rules: { 'app-boundaries': appBoundaries } } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'adp/app-boundaries': 'error',
    },
  },
);
