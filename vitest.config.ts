import { statfsSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

/**
 * A tmpfs with room to spare (at least 1 GiB free, so not a container's 64 MB /dev/shm) for the
 * tests' temp folders, unless TMPDIR is set: SQLite's fsyncs there cost nothing, and no test
 * is about a disk's durability (the bench measures a real disk's).
 */
function tmpfsDir(): string | undefined {
  if (process.env.TMPDIR) return undefined;
  try {
    const s = statfsSync('/dev/shm');
    return s.type === 0x01021994 && s.bavail * s.bsize >= 2 ** 30 ? '/dev/shm' : undefined;
  } catch {
    return undefined;
  }
}

const tmp = tmpfsDir();

/** PAYOUTS_TEST_CPU=1: each test file's CPU, printed at the end (test/helpers/cpu-stats.ts). */
const cpuStats = process.env.PAYOUTS_TEST_CPU === '1';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One PostgreSQL server for the tests of a shared history (each test makes its own database).
    globalSetup: ['test/helpers/pg-server.ts', ...(cpuStats ? ['test/helpers/cpu-stats.ts'] : [])],
    ...(cpuStats ? { setupFiles: ['test/helpers/cpu-per-file.ts'] } : {}),
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Three files at a time on two cores: much of the suite waits (spawned CLIs, pseudo-terminals,
    // real-time quiet times), and a third file runs while the others wait.
    maxWorkers: 3,
    // A worker runs file after file in one process: no test relies on a fresh one (each has
    // its own temp home and restores what it changes), and the CLI's modules load once.
    isolate: false,
    ...(tmp ? { env: { TMPDIR: tmp } } : {}),
  },
});
