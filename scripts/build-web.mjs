// Builds the console (web/) into web/dist. Run by `npm install` through the `prepare` script, so a
// fresh clone serves the console after the README's one set-up command. An install without the
// dev dependencies (`npm install --omit=dev`) has no Vite: it skips the build and says so, and the
// service then answers `/` with a note instead of the console.
import { fileURLToPath } from 'node:url';

let vite;
try {
  vite = await import('vite');
} catch {
  console.warn('console: Vite is not installed (dev dependencies omitted?); web/dist not built');
  process.exit(0);
}
const configFile = fileURLToPath(new URL('../web/vite.config.ts', import.meta.url));
await vite.build({ configFile, logLevel: process.env.CI ? 'warn' : 'info' });
