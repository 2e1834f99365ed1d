import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, renameSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../src/state/index.js';
import { MIGRATIONS } from '../../src/state/schema.js';
import { parseJsonStdout, sample, tempHomesPerTest } from '../helpers/cli.js';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { runsOnFakeClock } from '../helpers/main.js';
import { writeRun } from '../helpers/sandbox.js';
import { expectEveryRow, type SendDoc } from '../helpers/stopped-runs.js';

// Every problem with state.db, made for real, is the user's problem: exit 7, the file, the
// fix; SQLite's codes only with --debug. The lock held by another program is in
// test/e2e/state-db.test.ts (the CLI must run in a process of its own while the test holds it).

const run = runsOnFakeClock();
const tempHome = tempHomesPerTest();
afterEach(() => {
  vi.restoreAllMocks();
});

/** A temp home with a state folder, the path its state.db has, and a dry-run-free send. */
function home() {
  const h = tempHome();
  const dir = join(h.env.XDG_STATE_HOME!, 'payouts');
  mkdirSync(dir, { recursive: true });
  return { env: h.env, file: join(dir, 'state.db') };
}

const SEND = ['send', sample('payouts.csv'), '--sandbox', '--yes'];

/** Asserts the run ended as a state.db problem told plainly: exit 7, the file, no SQLite code. */
function expectPlain(r: { code: number; stderr: string }, file: string) {
  expect(r.code).toBe(7);
  expect(r.stderr).toContain(file);
  expect(r.stderr).not.toContain('internal error');
  expect(r.stderr).not.toMatch(/SQLITE_|cannot rollback/);
}

describe('state.db problems', () => {
  it('a damaged file (not a database): exit 7, names the file and how to move it aside', async () => {
    const h = home();
    writeFileSync(h.file, Buffer.alloc(8192, 0x41));
    for (const args of [SEND, ['runs']]) {
      const r = await run(args, { env: h.env });
      expectPlain(r, h.file);
      expect(r.stderr).toContain('is damaged (it is not a database)');
      expect(r.stderr).toContain(`mv ${h.file} ${h.file}.damaged`);
    }
    const debug = await run(['runs', '--debug'], { env: h.env });
    expect(debug.stderr).toContain('SQLITE_NOTADB');
    const json = await run(['runs', '--json'], { env: h.env });
    expect(json.code).toBe(7);
    const doc = parseJsonStdout<{ error: { type: string; exit_code: number } }>(json);
    expect(doc.error).toMatchObject({ type: 'StateError', exit_code: 7 });
  });

  it('a database written by a newer version: exit 7, says to update payouts', async () => {
    const h = home();
    const db = openDatabase(h.file);
    db.exec(`PRAGMA user_version = ${MIGRATIONS.length + 5}`);
    db.close();
    for (const args of [SEND, ['runs'], [...SEND.slice(0, 3), '--dry-run']]) {
      const r = await run(args, { env: h.env });
      expectPlain(r, h.file);
      expect(r.stderr).toContain('was written by a newer version of payouts');
      expect(r.stderr).toContain('update payouts');
    }
  });

  it('a full disk: exit 7, says to free space and run again, and never "cannot rollback"', async () => {
    const h = home();
    // SQLite reports a database that may not grow exactly as a full disk (SQLITE_FULL).
    const exec = Database.prototype.exec;
    vi.spyOn(Database.prototype, 'exec').mockImplementation(function (
      this: Database.Database,
      sql: string,
    ) {
      const out = exec.call(this, sql);
      if (sql === 'PRAGMA synchronous = FULL') {
        const { page_count: pages } = this.prepare('PRAGMA page_count').get() as {
          page_count: number;
        };
        exec.call(this, `PRAGMA max_page_count = ${pages}`);
      }
      return out;
    });
    const r = await run(SEND, { env: h.env });
    expectPlain(r, h.file);
    expect(r.stderr).toContain('the disk is full');
    expect(r.stderr).toContain('free space on that disk, then run the same command again');
    const debug = await run([...SEND, '--debug'], { env: h.env });
    expect(debug.stderr).toContain('SQLITE_FULL');
  });

  it('a file this user may not write: exit 7, says to make it writable', async (ctx) => {
    const h = home();
    writeFileSync(h.file, '');
    const undo = makeReadOnly(h.file);
    if (undo === undefined) ctx.skip();
    try {
      const r = await run(SEND, { env: h.env });
      expectPlain(r, h.file);
      expect(r.stderr).toContain(`cannot write the state database ${h.file}`);
      expect(r.stderr).toContain('make it and its folder writable by you');
    } finally {
      undo?.();
    }
  });
});

/**
 * Makes every state.db connection opened from now on unable to grow once `full()` is called:
 * SQLite reports a database at its max_page_count exactly as a full disk (SQLITE_FULL). A
 * tmpfs would fill a real disk, but mounting one needs a privilege CI containers lack.
 */
function diskFillsOnDemand(): { full(): void } {
  const connections: Database.Database[] = [];
  const exec = Database.prototype.exec;
  vi.spyOn(Database.prototype, 'exec').mockImplementation(function (
    this: Database.Database,
    sql: string,
  ) {
    if (sql === 'PRAGMA synchronous = FULL') connections.push(this);
    return exec.call(this, sql);
  });
  return {
    full() {
      for (const db of connections) {
        if (!db.open) continue;
        const { page_count: pages } = db.prepare('PRAGMA page_count').get() as {
          page_count: number;
        };
        exec.call(db, `PRAGMA max_page_count = ${pages}`);
      }
    },
  };
}

describe('state.db failing mid-send', () => {
  const ledger = ledgerPerTest();

  it('a disk that fills mid-send: every row keeps its status, counts agree, exit 7; the next run finishes once', async () => {
    const disk = diskFillsOnDemand();
    const svc = await ledger.start((n) => {
      if (n === 4) disk.full();
      return {};
    });
    const h = ledger.home();
    const { file, refs } = writeRun(h.dir, 300);
    const args = ['send', file, '--yes', '--json', '--chunk-size', '25', '--concurrency', '2'];
    const r = await run(args, { env: svc.env(h.env) });
    expect(r.code, r.stderr).toBe(7);
    const doc = JSON.parse(r.stdout) as SendDoc;
    expect(doc.error).toMatchObject({ type: 'StateError', exit_code: 7 });
    expect(doc.error!.message).toContain('the disk is full');
    expectEveryRow(doc, refs);
    expect(doc.success_count).toBe(svc.held.size);
    // No request after the failed commit but those in flight and the two prepared ahead.
    expect(svc.creates).toBeLessThanOrEqual(4 + 2 + 2);
    vi.restoreAllMocks();
    const again = await run(args, { env: svc.env(h.env) });
    expect(again.code, again.stderr).toBe(0);
    expect([...svc.held.keys()].sort()).toEqual([...refs].sort());
    expect(svc.appliedTwice()).toEqual([]);
  });
});

describe('a state.db that lost its contents', () => {
  const ledger = ledgerPerTest();

  /** A folder whose state.db recorded a run of 30 payouts to a ledger service. */
  async function sentOnce() {
    const svc = await ledger.start();
    const h = ledger.home();
    const { file: csv, refs } = writeRun(h.dir, 30);
    const args = ['send', csv, '--yes'];
    const first = await run(args, { env: svc.env(h.env) });
    expect(first.code, first.stderr).toBe(0);
    const file = join(h.env.XDG_STATE_HOME!, 'payouts', 'state.db');
    return { svc, h, args, refs, file };
  }

  it('a 0-byte state.db in a folder that sent before: damaged, exit 7, nothing sent again', async () => {
    const { svc, h, args, file } = await sentOnce();
    truncateSync(file, 0);
    // A dry run, as one often comes first, neither takes it for new nor makes it so.
    const dry = await run([...args, '--dry-run'], { env: svc.env(h.env) });
    expectPlain(dry, file);
    expect(statSync(file).size).toBe(0);
    const again = await run(args, { env: svc.env(h.env) });
    expectPlain(again, file);
    expect(again.stderr).toContain(`the state database ${file} is damaged (it is empty, but`);
    expect(again.stderr).toContain('--check-service');
    expect(svc.creates).toBe(1);
    expect((await run(['runs'], { env: h.env })).code).toBe(7);
    // Moved aside as the message says, --check-service finds every payout sent: none twice.
    renameSync(file, `${file}.damaged`);
    const checked = await run([...args, '--check-service'], { env: svc.env(h.env) });
    expect(checked.code, checked.stderr).toBe(0);
    expect(svc.creates).toBe(1);
    expect(svc.appliedTwice()).toEqual([]);
  });

  it('a 0-byte state.db in a folder never used is a fresh start', async () => {
    const h = home();
    writeFileSync(h.file, '');
    const r = await run(['runs'], { env: h.env });
    expect(r.code, r.stderr).toBe(0);
  });
});

/**
 * Makes a file that this process cannot open for writing, and returns how to undo it: mode
 * 0400 for a user, the immutable attribute for root (whom file modes do not stop).
 */
function makeReadOnly(file: string): (() => void) | undefined {
  if (process.getuid?.() !== 0) {
    chmodSync(file, 0o400);
    return () => chmodSync(file, 0o600);
  }
  try {
    execFileSync('chattr', ['+i', file], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  return () => execFileSync('chattr', ['-i', file], { stdio: 'ignore' });
}
