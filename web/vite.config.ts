import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The console is built into web/dist during `npm install` (the root `prepare` script) and served by
// the API process at `/`. `npx vite --config web/vite.config.ts` serves it with hot reload and
// forwards the API paths to a running service (CDP_API, default http://127.0.0.1:8080).
const root = fileURLToPath(new URL('.', import.meta.url));
const api = process.env.CDP_API ?? 'http://127.0.0.1:8080';
const apiPaths = ['/tenant', '/identity', '/intelligence', '/api', '/openapi.json', '/system', '/ready'];

export default defineConfig({
  root,
  base: '/',
  plugins: [react()],
  resolve: {
    // react-router's package points bundlers at its development build; the production one is smaller.
    alias: {
      'react-router': fileURLToPath(
        new URL('../node_modules/react-router/dist/production/index.mjs', import.meta.url),
      ),
    },
  },
  build: {
    // One chunk per page (React.lazy in App.tsx): a page's heavy libraries (charts, the graph) load
    // with the first page that needs them; Rollup puts what several pages share in shared chunks.
    outDir: 'dist',
    emptyOutDir: true,
  },
  server: {
    proxy: Object.fromEntries(apiPaths.map((p) => [p, { target: api, changeOrigin: false }])),
  },
});
