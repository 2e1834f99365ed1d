import { cpSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../../src/state/index.js';
import { describe, expect, it } from 'vitest';
import { runCli, sample, spawnCli, tempHomesPerTest } from '../helpers/cli.js';

// state.db problems that need the CLI in a process of its own: a lock this test holds while
// the CLI waits, and an install whose better-sqlite3 cannot load. The others are in
// test/inprocess/state-db.test.ts.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const home = tempHomesPerTest();

describe('state.db locked by another program', () => {
  it('says so after the first wait, keeps waiting, and goes on once the lock is gone', async () => {
    const h = home();
    const dir = join(h.env.XDG_STATE_HOME!, 'payouts');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'state.db');
    const holder = openDatabase(file);
    holder.exec('PRAGMA journal_mode = WAL; BEGIN EXCLUSIVE');
    let released = false;
    try {
      const child = spawnCli(['send', sample('payouts.csv'), '--sandbox', '--yes', '--json'], {
        env: h.env,
      });
      child.stdin.end();
      let stderr = '';
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        stdout += d;
      });
      const code = new Promise<number | null>((resolve) => child.on('close', resolve));
      await new Promise<void>((resolve) => {
        child.stderr.setEncoding('utf8').on('data', (d: string) => {
          stderr += d;
          // Released only once the CLI has said it waits: the wait is what is tested.
          if (!released && stderr.includes('is locked by another program')) {
            holder.exec('ROLLBACK');
            released = true;
            resolve();
          }
        });
        child.on('close', () => resolve());
      });
      expect(released).toBe(true);
      expect(stderr).toContain(`the state database ${file} is locked by another program`);
      expect(stderr).toContain('waiting up to 28 s more');
      expect(await code).toBe(0);
      expect(JSON.parse(stdout).success_count).toBeGreaterThan(0);
    } finally {
      if (!released) holder.exec('ROLLBACK');
      holder.close();
    }
  });
});

describe('better-sqlite3 that cannot load', () => {
  /** A copy of the installed CLI whose better-sqlite3 has no compiled part, as `npm install --ignore-scripts` leaves it. */
  function install(dir: string): string {
    for (const part of ['package.json', 'bin', 'dist'])
      cpSync(join(ROOT, part), join(dir, part), { recursive: true });
    const modules = join(dir, 'node_modules');
    mkdirSync(modules);
    for (const name of readdirSync(join(ROOT, 'node_modules'))) {
      if (name !== 'better-sqlite3' && !name.startsWith('.')) {
        symlinkSync(join(ROOT, 'node_modules', name), join(modules, name));
      }
    }
    const own = join(modules, 'better-sqlite3');
    for (const part of ['package.json', 'lib']) {
      cpSync(join(ROOT, 'node_modules', 'better-sqlite3', part), join(own, part), {
        recursive: true,
      });
    }
    return join(dir, 'bin', 'payouts.js');
  }

  it('says to run npm rebuild better-sqlite3 where it is installed, exit 7', async () => {
    // A broken compiled file (dlopen refuses it) is in test/unit/state/errors.test.ts.
    const h = home();
    const dir = join(h.dir, 'ignore-scripts');
    const r = await runCli(['send', sample('payouts.csv'), '--sandbox', '--dry-run'], {
      env: h.env,
      bin: install(dir),
    });
    expect(r.code, r.stderr).toBe(7);
    expect(r.stderr).toContain(
      'payouts cannot load better-sqlite3, the SQLite module that keeps its state: its compiled part is missing (was it installed with --ignore-scripts?)',
    );
    expect(r.stderr).toContain(
      `run npm rebuild better-sqlite3 in ${dir}, or install payouts again`,
    );
    expect(r.stderr).not.toContain('internal error');
  });
});
