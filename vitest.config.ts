import { defineConfig } from 'vitest/config';

// Four projects: everything (files in parallel); the store suites, which start a real
// PostgreSQL server once per run (globalSetup) and open PGlite databases; the shared-state
// suites, which start one real redis-server per run (and stop and restart it to test outages);
// and the reliability slices (fuzzer, fault storm, abuse), each of which keeps a core busy.
// The last three run one file at a time, so they neither fight over the two cores nor over a server.
const SERIAL = ['test/store/**/*.test.ts'];
const REDIS = ['test/state/**/*.test.ts'];
const RELIABILITY = ['test/reliability/**/*.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'parallel', include: ['test/**/*.test.ts'], exclude: [...SERIAL, ...REDIS, ...RELIABILITY] } },
      { extends: true, test: { name: 'serial', include: SERIAL, fileParallelism: false, globalSetup: ['test/store/postgres-server.ts'] } },
      { extends: true, test: { name: 'reliability', include: RELIABILITY, fileParallelism: false } },
      { extends: true, test: { name: 'redis', include: REDIS, fileParallelism: false, globalSetup: ['test/state/redis-server.ts'] } },
    ],
  },
});
