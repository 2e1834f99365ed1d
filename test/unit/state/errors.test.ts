import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode, exitCodeForError } from '../../../src/exit-codes.js';
import { openDatabase } from '../../../src/state/db.js';
import { guardConnection, moduleLoadError, StateError } from '../../../src/state/errors.js';
import { payoutHash, RunIntake } from '../../../src/state/index.js';
import { openDb, tempStateDir } from './helpers.js';

/** What a call threw. */
function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  throw new Error('it did not throw');
}

describe('state.db errors at the connection', () => {
  it('tells of a lock after the first wait, waits on, then names the file and the fix (exit 7)', async () => {
    const dir = await tempStateDir();
    const notices: string[] = [];
    const db = await openDb(dir, { notice: (m) => notices.push(m), noticeMs: 20, waitMs: 60 });
    const file = join(dir, 'state.db');
    // Another program holds the write lock, as a database browser with unsaved changes does.
    const other = openDatabase(file);
    other.exec('BEGIN EXCLUSIVE');
    try {
      const err = thrown(() =>
        db.transaction(() => db.prepare("INSERT INTO meta VALUES ('k', 'v')").run())(),
      );
      expect(notices).toEqual([
        `the state database ${file} is locked by another program: waiting up to 1 s more for it (close the program that holds it to go on at once)`,
      ]);
      expect(err).toBeInstanceOf(StateError);
      expect((err as StateError).problem).toBe('locked');
      expect((err as Error).message).toContain(file);
      expect((err as Error).message).toContain('close the program that holds it');
      expect(((err as Error).cause as { code: string }).code).toBe('SQLITE_BUSY');
      expect(exitCodeForError(err)).toBe(ExitCode.unreachable);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    // The lock gone, the same connection writes again.
    db.transaction(() => db.prepare("INSERT INTO meta VALUES ('k', 'v')").run())();
    expect(db.prepare("SELECT value FROM meta WHERE key = 'k'").get()).toEqual({ value: 'v' });
  });

  it('reports a full disk met inside a batch, not "cannot rollback" from ending it', async () => {
    const db = await openDb(await tempStateDir());
    const rows = RunIntake.begin(db, { pid: process.pid, inputs: ['p.csv'], now: new Date() });
    const { page_count: pages } = db.prepare('PRAGMA page_count').get() as { page_count: number };
    db.exec(`PRAGMA max_page_count = ${pages}`);
    // One row at a time: SQLite rolls the whole batch back when a lone insert finds no room.
    const err = thrown(() => {
      for (let i = 0; i < 10_000; i++) {
        const p = {
          reference_id: `R${i}`,
          amount: '1',
          currency: 'EUR',
          recipient: 'a'.repeat(900),
        };
        rows.add({ ...p, file: 'p.csv', location: `line ${i + 2}`, hash: payoutHash(p) });
        rows.finish();
      }
    });
    expect(err).toBeInstanceOf(StateError);
    expect((err as StateError).problem).toBe('full');
    expect(db.inTransaction).toBe(false);
    expect(() => rows.discard()).not.toThrow();
  });

  it('names a database opened read-only, as SQLite reports it', async () => {
    const dir = await tempStateDir();
    const db = await openDb(dir);
    db.close();
    const file = join(dir, 'state.db');
    const ro = openDatabase(file, { readonly: true });
    guardConnection(ro, file, { notice: () => {}, noticeMs: 10, waitMs: 10 });
    const err = thrown(() => ro.prepare("INSERT INTO meta VALUES ('k', 'v')").run());
    ro.close();
    expect(err).toBeInstanceOf(StateError);
    expect((err as StateError).problem).toBe('read-only');
    expect((err as Error).message).toMatch(
      new RegExp(`^cannot write the state database ${file}: permission denied: make it`),
    );
  });
});

describe('better-sqlite3 that will not load', () => {
  it('says to rebuild it after a Node.js upgrade, naming where', () => {
    // Node's own words for a module built by another Node.js.
    const err = Object.assign(
      new Error(`The module '/opt/payouts/node_modules/better-sqlite3/build/Release/better_sqlite3.node'
was compiled against a different Node.js version using
NODE_MODULE_VERSION 115. This version of Node.js requires
NODE_MODULE_VERSION 127. Please try re-compiling or re-installing
the module (for instance, using \`npm rebuild\` or \`npm install\`).`),
      { code: 'ERR_DLOPEN_FAILED' },
    );
    const e = moduleLoadError(err);
    expect(e?.message).toMatch(
      /^payouts cannot load better-sqlite3, the SQLite module that keeps its state: it was built for another version of Node\.js \(NODE_MODULE_VERSION 115; this Node\.js v[\d.]+ needs 127\): run npm rebuild better-sqlite3 in \S+, or install payouts again$/,
    );
    expect(exitCodeForError(e)).toBe(ExitCode.unreachable);
  });

  it('says so when the compiled file is missing or broken, and leaves other errors alone', async () => {
    const missing = new Error('Could not locate the bindings file. Tried:\n → /x/build/...');
    expect(moduleLoadError(missing)?.message).toContain(
      'its compiled part is missing (was it installed with --ignore-scripts?)',
    );
    const junk = join(await tempStateDir(), '..', 'junk.node');
    writeFileSync(junk, 'not a shared object');
    const broken = thrown(() => process.dlopen({ exports: {} }, junk));
    expect(moduleLoadError(broken)?.message).toContain('its compiled part cannot be loaded');
    expect(moduleLoadError(new Error('something else'))).toBeUndefined();
  });
});
