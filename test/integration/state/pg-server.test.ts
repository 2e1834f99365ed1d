import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { preparePgFolders, startPostgres } from '../../helpers/pg-server.js';

// Issue 31, item 8: npm test as root in a clone inside a 0700 folder crashed, since the user
// the tests' PostgreSQL runs as could not reach initdb.

describe("the tests' PostgreSQL", () => {
  it.skipIf(process.getuid?.() !== 0)(
    'as root, runs from binaries and a data folder the user postgres can reach',
    async () => {
      const folders = await preparePgFolders();
      try {
        expect(folders.runAs).toBeDefined();
        for (let dir = folders.bin; dir !== '/'; dir = dirname(dir)) {
          expect(statSync(dir).mode & 0o005, dir).toBe(0o005);
        }
        expect(statSync(folders.data).uid).toBe(folders.runAs!.uid);
        const version = execFileSync(join(folders.bin, 'initdb'), ['--version'], {
          ...folders.runAs,
        });
        expect(version.toString()).toMatch(/initdb \(PostgreSQL\) \d+/);
      } finally {
        rmSync(folders.root, { recursive: true, force: true });
      }
    },
  );

  it('that cannot start is an error naming the program and the way out, not a crash', async () => {
    const root = mkdtempSync(join(tmpdir(), 'payouts-pg-test-'));
    try {
      mkdirSync(join(root, 'data'));
      const folders = {
        root,
        bin: join(root, 'no-bin'),
        data: join(root, 'data'),
        runAs: undefined,
      };
      await expect(startPostgres(folders)).rejects.toThrow(
        /the tests' PostgreSQL did not start: initdb could not be run \(spawn .*ENOENT\)/,
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
