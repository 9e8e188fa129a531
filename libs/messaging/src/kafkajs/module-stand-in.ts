/** Whether each module (by resolved path) got its stand-in: decided once per process. */
const decided = new Map<string, boolean>();

/**
 * Puts the exports `make` returns in the module cache under kafkajs's module `name`, so that
 * requiring it returns them; once per process. False when that module, or one of `capturedBy`
 * (kafkajs modules that capture it when they load), was loaded already: kafkajs's own then stays
 * in use, still correct, slower.
 */
export function standInModule(
  name: string,
  make: () => unknown,
  capturedBy: readonly string[] = [],
): boolean {
  const path = require.resolve(name);
  const known = decided.get(path);
  if (known !== undefined) return known;
  if ([name, ...capturedBy].some((m) => require.cache[require.resolve(m)])) {
    decided.set(path, false);
    return false;
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Module } = require('node:module') as { Module: new (id: string) => NodeJS.Module };
  const entry = new Module(path);
  entry.filename = path;
  entry.exports = make();
  entry.loaded = true;
  require.cache[path] = entry;
  decided.set(path, true);
  return true;
}
