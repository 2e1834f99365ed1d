import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // End-to-end tests spawn the CLI; two cores run two files at a time comfortably.
    maxWorkers: 2,
  },
});
