import { defineConfig } from 'vitest/config';

// Two projects: everything (files in parallel), and the store suites, which start a real
// PostgreSQL server once per run (globalSetup) and open PGlite databases: one file at a time,
// so they neither fight over the two cores nor over the server.
const SERIAL = ['test/store/**/*.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'parallel', include: ['test/**/*.test.ts'], exclude: SERIAL } },
      { extends: true, test: { name: 'serial', include: SERIAL, fileParallelism: false, globalSetup: ['test/store/postgres-server.ts'] } },
    ],
  },
});
