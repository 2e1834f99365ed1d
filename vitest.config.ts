import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One PostgreSQL server for the tests of a shared history (each test makes its own database).
    globalSetup: ['test/helpers/pg-server.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Three files at a time on two cores: much of the suite waits (spawned CLIs, pseudo-terminals,
    // real-time quiet times), and a third file runs while the others wait.
    maxWorkers: 3,
    // A worker runs file after file in one process: no test relies on a fresh one (each has
    // its own temp home and restores what it changes), and the CLI's modules load once.
    isolate: false,
  },
});
