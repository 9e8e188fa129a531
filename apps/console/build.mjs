// Bundles the console (Preact + plain CSS) into dist/console, which the API serves under /console.
// Offline: esbuild and preact come from node_modules; nothing is fetched at build or run time.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', '..', 'dist', 'console');
mkdirSync(out, { recursive: true });
await build({
  entryPoints: { app: join(here, 'src', 'main.tsx') },
  bundle: true,
  minify: true,
  sourcemap: true,
  format: 'esm',
  target: ['es2022'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir: out,
  logLevel: 'warning',
});
await build({
  entryPoints: { app: join(here, 'src', 'app.css') },
  bundle: true,
  minify: true,
  outdir: out,
  logLevel: 'warning',
});
copyFileSync(join(here, 'index.html'), join(out, 'index.html'));
