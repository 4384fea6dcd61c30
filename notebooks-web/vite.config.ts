/**
 * Vite dev mode for the dashboard app: hot-reloading UI on http://127.0.0.1:5173/ with `/api`
 * proxied to a running `switchyard dashboard` (default http://127.0.0.1:8090; override with
 * SWITCHYARD_API). Production builds do not use this file: `switchyard dashboard` builds with
 * the same settings through server/app-build.ts.
 *
 *   node bin/switchyard.mjs dashboard results/default.duckdb        # API (and built app) on :8090
 *   npx vite --config notebooks-web/vite.config.ts                  # dev UI on :5173
 */
import { defineConfig } from 'vite';
import { appViteConfig } from './server/app-build.ts';

// `configFile: false` belongs to the programmatic build; a config file cannot carry it.
const { configFile: _ignored, ...shared } = appViteConfig();

export default defineConfig({
  ...shared,
  server: {
    host: '127.0.0.1',
    port: 5173,
    strictPort: false,
    proxy: { '/api': { target: process.env.SWITCHYARD_API ?? 'http://127.0.0.1:8090', changeOrigin: false } },
  },
});
