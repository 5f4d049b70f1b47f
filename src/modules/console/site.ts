import { existsSync, readdirSync, statSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, gzip, constants as zlib } from 'node:zlib';
import fastifyStatic from '@fastify/static';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { App } from '../../platform/http/types';
import { PROJECT_ROOT } from '../../platform/project-root';

/** Where `npm install` (the `prepare` step) builds the web app. */
export const DEFAULT_CONSOLE_DIR = join(PROJECT_ROOT, 'web', 'dist');

/**
 * Paths that belong to the API: the console never answers under them, so an unknown API path keeps
 * its JSON 404 (docs/console.md, "Serving").
 */
export const API_PREFIXES = [
  '/api',
  '/tenant',
  '/identity',
  '/intelligence',
  '/system',
  '/health',
  '/ready',
  '/openapi.json',
  '/docs',
  '/v1',
] as const;

/**
 * Console pages named like an API root that has no route of its own: the page is `/intelligence`,
 * the API's routes are all below it (`/intelligence/models`, …), so the bare path is the console's.
 */
const CONSOLE_PAGES_AT_API_ROOTS = new Set(['/intelligence']);

export const isApiPath = (path: string): boolean =>
  !CONSOLE_PAGES_AT_API_ROOTS.has(path.split('?')[0] ?? path) &&
  API_PREFIXES.some((p) => path === p || path.startsWith(`${p}/`) || path.startsWith(`${p}?`));

/** Hashed build output: the name changes with the content, so it may be cached for good. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** index.html and other unhashed files: revalidated on every load, so a new build shows at once. */
const REVALIDATE = 'no-cache';

/**
 * The console's pages may load only what the service serves itself. Inline styles are allowed
 * (the component library sets style attributes), inline scripts are not.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
} as const;

/** Types worth compressing; images and fonts (woff2) are compressed already. */
const COMPRESSIBLE = /\.(js|mjs|css|html|svg|json|txt|map|webmanifest)$/;
const MIN_COMPRESS_BYTES = 1024;

const notBuiltPage = (dir: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>cdp console – not built</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto; line-height: 1.5">
<main>
<h1>The console is not built</h1>
<p>The API is running (reference: <a href="/docs">/docs</a>), but the web console's files are missing
from <code>${dir.replace(/[<>&]/g, '')}</code>.</p>
<p>Build it with <code>npm install</code> (its <code>prepare</code> step builds the console), or
<code>npm run prepare</code> in an installed checkout, then reload this page.</p>
</main></body></html>
`;

function listFiles(dir: string): Set<string> {
  const out = new Set<string>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && !/\.(br|gz)$/.test(e.name)) out.add(`/${relative(dir, p).split(sep).join('/')}`);
    }
  };
  walk(dir);
  return out;
}

/**
 * Writes `.br` and `.gz` beside each compressible file that has none, once per build (the files
 * stay): @fastify/static then sends the smallest one the browser accepts. A read-only directory is
 * served uncompressed. Runs in the background, on zlib's thread pool.
 */
async function precompress(dir: string, files: Iterable<string>, log: Pick<Logger, 'warn' | 'debug'>) {
  const br = promisify(brotliCompress);
  const gz = promisify(gzip);
  let written = 0;
  for (const f of files) {
    if (!COMPRESSIBLE.test(f)) continue;
    const path = join(dir, f);
    try {
      if (existsSync(`${path}.br`) && existsSync(`${path}.gz`)) continue;
      const raw = await readFile(path);
      if (raw.length < MIN_COMPRESS_BYTES) continue;
      if (!existsSync(`${path}.br`)) {
        await writeFile(
          `${path}.br`,
          await br(raw, {
            params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: raw.length },
          }),
        );
      }
      if (!existsSync(`${path}.gz`)) await writeFile(`${path}.gz`, await gz(raw, { level: 9 }));
      written++;
    } catch (err) {
      log.warn({ file: f, err: (err as Error).message }, 'console: could not write a compressed copy');
      return;
    }
  }
  if (written > 0) log.debug({ files: written }, 'console: compressed copies written');
}

export interface ConsoleSite {
  /** The not-found handler: console files and pages outside the API, else the API's own 404. */
  notFound(
    apiNotFound: (req: FastifyRequest, reply: FastifyReply) => unknown,
  ): (req: FastifyRequest, reply: FastifyReply) => unknown;
  /** Resolves once the compressed copies are written (tests, benchmarks). */
  readonly compressed: Promise<void>;
}

/**
 * Serves the built web app (docs/console.md, "Serving"): its files, and index.html for any other
 * GET that accepts HTML outside the API's paths (deep links such as /profiles/{id}), so an API path
 * is never shadowed. Nothing is registered as a route: the console answers only what no route does.
 */
export async function registerConsoleSite(
  app: App,
  opts: { dir: string; log: Pick<Logger, 'warn' | 'debug'> },
): Promise<ConsoleSite> {
  const dir = opts.dir;
  const built = existsSync(join(dir, 'index.html'));
  let files = built ? listFiles(dir) : new Set<string>();
  // Without a build there is nothing to send (and the plugin would warn about its missing root).
  if (built)
    await app.register(fastifyStatic, { root: dir, serve: false, preCompressed: true, index: false });
  const compressed = built ? precompress(dir, [...files], opts.log) : Promise.resolve();

  /** A file of the build: the listing of the start, or a file a rebuild added since. */
  const isFile = (path: string): boolean => {
    if (files.has(path)) return true;
    if (!built || path.includes('..') || path.includes('\0')) return false;
    try {
      if (!statSync(join(dir, path)).isFile()) return false;
      files = listFiles(dir);
      return files.has(path);
    } catch {
      return false;
    }
  };

  const sendPage = (reply: FastifyReply) =>
    reply.headers({ ...PAGE_HEADERS, 'cache-control': REVALIDATE }).sendFile('index.html', {
      cacheControl: false,
    });

  return {
    compressed,
    notFound(apiNotFound) {
      return (req, reply) => {
        const path = decodeURIComponentSafe((req.url.split('?')[0] ?? '/').split('#')[0] ?? '/');
        if ((req.method !== 'GET' && req.method !== 'HEAD') || path === null || isApiPath(path)) {
          return apiNotFound(req, reply);
        }
        const wantsPage = /\btext\/html\b/.test(req.headers.accept ?? '') || path === '/';
        if (!built) {
          if (!wantsPage) return apiNotFound(req, reply);
          return reply
            .code(path === '/' ? 200 : 404)
            .headers({ ...PAGE_HEADERS, 'cache-control': REVALIDATE })
            .type('text/html; charset=utf-8')
            .send(notBuiltPage(dir));
        }
        if (path !== '/' && isFile(path)) {
          const hashed = path.startsWith('/assets/');
          void reply.header('cache-control', hashed ? IMMUTABLE : REVALIDATE);
          if (path.endsWith('.html')) void reply.headers(PAGE_HEADERS);
          return reply.sendFile(path.slice(1), { cacheControl: false });
        }
        // A missing hashed asset is an old build's: a 404, never the page in its place.
        if (wantsPage && !path.startsWith('/assets/')) return sendPage(reply);
        return apiNotFound(req, reply);
      };
    },
  };
}

function decodeURIComponentSafe(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}
