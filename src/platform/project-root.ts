import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The checkout's root: the nearest directory above this module holding the project's package.json.
 * Files the service reads at run time (migrations/, web/dist) are found from it, so the same code
 * works from src/ through the TypeScript loader and from a bundle built inside the checkout (the
 * test suite's, test/global-setup.ts), whose modules sit at another depth.
 */
export const PROJECT_ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === 'cdp') return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json of cdp above ${from}`);
  }
}
