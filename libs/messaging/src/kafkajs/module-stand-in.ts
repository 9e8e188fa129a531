/** Puts `exports` in the module cache under `path` (resolved), so that requiring it returns them. */
export function standInModule(path: string, exports: unknown): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Module } = require('node:module') as { Module: new (id: string) => NodeJS.Module };
  const entry = new Module(path);
  entry.filename = path;
  entry.exports = exports;
  entry.loaded = true;
  require.cache[path] = entry;
}
