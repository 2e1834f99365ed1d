import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One PostgreSQL server for the tests of a shared history (each test makes its own database).
    globalSetup: ['test/helpers/pg-server.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // End-to-end tests spawn the CLI; two cores run two files at a time comfortably.
    maxWorkers: 2,
    // A worker runs file after file in one process: no test relies on a fresh one (each has
    // its own temp home and restores what it changes), and the CLI's modules load once.
    isolate: false,
  },
});
