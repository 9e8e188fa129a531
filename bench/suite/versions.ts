/** The installed version of a package, as its package.json says (what the results quote). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { config } from './config';

export function versionOf(pkg: string): string {
  try {
    const file = join(config.root, 'node_modules', pkg, 'package.json');
    return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}
