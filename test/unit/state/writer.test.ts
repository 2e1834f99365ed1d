import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { StateError } from '../../../src/state/errors.js';
import { openDatabase, payoutHash, RunIntake, STATE_DB } from '../../../src/state/index.js';
import { type StateWriter, threadWriter } from '../../../src/state/writer.js';
import { openDb, openRun, payout, rowsOf, tempStateDir } from './helpers.js';

// The writer thread runs the bundle's script (npm test builds it first): the sources are
// TypeScript, which a worker thread cannot load.
const SCRIPT = new URL('../../../dist/chunks/state-writer.js', import.meta.url);

// Without the bundle the thread never starts, and a flush would wait for it for ever.
beforeAll(() => {
  if (!existsSync(SCRIPT)) throw new Error('dist/ is not built: run node scripts/build.mjs first');
});

/** The state of a payout, read through a connection of its own, as a crash would leave it. */
function stateOf(stateDir: string, ref: string): unknown {
  const db = openDatabase(join(stateDir, STATE_DB), { readonly: true });
  try {
    return db.prepare('SELECT state, status FROM journal WHERE reference_id = ?').get(ref);
  } finally {
    db.close();
  }
}

/** One answer over loopback: the main thread's event loop handled it. */
async function answer(): Promise<string> {
  const server = createServer((_req, res) => res.end('answered'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const { port } = server.address() as { port: number };
    return await (await fetch(`http://127.0.0.1:${port}/`)).text();
  } finally {
    server.close();
  }
}

/** A writer thread whose commits wait until `release` is called (a slow fsync, as a test hook). */
function heldWriter(file: string, notices: string[] = [], wait = 2_000) {
  const gate = new SharedArrayBuffer(4);
  /** The countdowns shown, and whether each was ended. */
  const countdowns: Array<{ ms: number; ended: boolean }> = [];
  const countdown = (ms: number) => {
    const c = { ms, ended: false };
    countdowns.push(c);
    return () => {
      c.ended = true;
    };
  };
  const writer: StateWriter = threadWriter({
    file,
    wait: { notice: (m) => notices.push(m), noticeMs: wait, waitMs: wait, countdown },
    script: SCRIPT,
    gate,
  });
  const release = () => {
    Atomics.store(new Int32Array(gate), 0, 1);
    Atomics.notify(new Int32Array(gate), 0);
  };
  return { writer, release, countdowns };
}

describe('the writer thread', () => {
  it('is in the bundle beside the code that starts it, which finds it through import.meta.url', () => {
    const chunks = new URL('../../../dist/chunks/', import.meta.url);
    const starters = readdirSync(chunks).filter((name) =>
      readFileSync(new URL(name, chunks), 'utf8').includes(
        'new URL("./state-writer.js", import.meta.url)',
      ),
    );
    expect(starters.length).toBeGreaterThan(0);
    expect(existsSync(SCRIPT)).toBe(true);
    expect(readFileSync(new URL('../../../dist/cli.js', import.meta.url), 'utf8')).not.toContain(
      'state-writer.js',
    );
  });

  it('handles other answers while a commit is held, and resolves an intent only once durable', async () => {
    const stateDir = await tempStateDir();
    const db = await openDb(stateDir);
    const { writer, release } = heldWriter(join(stateDir, STATE_DB));
    const state = openRun(db, ['A', 'B'], { writer });
    let durable = false;
    const intent = state.recordIntent(1, rowsOf(state, 'A')).then(() => {
      durable = true;
    });
    // The commit is held in the thread: the main thread still takes answers and records them.
    expect(await answer()).toBe('answered');
    state.recordOutcome(2, [{ ref: 'B', status: 'success' }]);
    expect(await answer()).toBe('answered');
    // Not durable yet, so the engine would not have sent request 1.
    expect(durable).toBe(false);
    expect(stateOf(stateDir, 'A')).toMatchObject({ state: 'queued' });
    release();
    await intent;
    expect(stateOf(stateDir, 'A')).toMatchObject({ state: 'in_flight' });
    await state.close();
    expect(stateOf(stateDir, 'B')).toMatchObject({ state: 'done', status: 'success' });
  });

  it('reports a commit that fails in the thread as the same StateError, and writes no more', async () => {
    const stateDir = await tempStateDir();
    const file = join(stateDir, STATE_DB);
    const db = await openDb(stateDir);
    const notices: string[] = [];
    const { writer, release, countdowns } = heldWriter(file, notices, 10);
    const state = openRun(db, ['A', 'B'], { writer });
    // Another program holds the write lock for longer than both waits.
    const other = openDatabase(file);
    other.exec('BEGIN IMMEDIATE');
    try {
      release();
      const err = await state.recordIntent(1, rowsOf(state, 'A')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StateError);
      expect((err as StateError).problem).toBe('locked');
      expect((err as Error).message).toBe(
        `the state database ${file} stayed locked by another program: close the program that holds it open in a transaction (a database browser, or sqlite3 with BEGIN), then run the same command again`,
      );
      expect(((err as Error).cause as { code: string }).code).toBe('SQLITE_BUSY');
      expect(notices).toEqual([
        `the state database ${file} is locked by another program: waiting up to 1 s more for it (close the program that holds it to go on at once)`,
      ]);
      // The told wait was counted down, and the countdown ended with the wait.
      expect(countdowns).toEqual([{ ms: 10, ended: true }]);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    await expect(state.recordIntent(2, rowsOf(state, 'B'))).rejects.toBeInstanceOf(StateError);
    await expect(state.close()).rejects.toBeInstanceOf(StateError);
    expect(stateOf(stateDir, 'A')).toMatchObject({ state: 'queued' });
  });
});

/** A run's rows staged through a writer thread, as a send's pass 1 stages them. */
async function threadStaging(wait = 2_000) {
  const stateDir = await tempStateDir();
  const file = join(stateDir, STATE_DB);
  const db = await openDb(stateDir);
  const noop = () => {};
  const writer = threadWriter({
    file,
    wait: { notice: noop, noticeMs: wait, waitMs: wait },
    script: SCRIPT,
  });
  const rows = RunIntake.begin(db, { pid: process.pid, inputs: ['p.csv'], now: new Date() });
  rows.handTo(writer.stager!);
  const add = (ref: string, line: number) =>
    rows.add({ ...payout(ref, `${line}.50`), file: 'p.csv', line, hash: '' });
  const stored = () =>
    db
      .prepare('SELECT reference_id, amount, currency, recipient, hash FROM payouts WHERE run = ?')
      .all(rows.id) as Array<{
      reference_id: string;
      amount: string;
      currency: string;
      recipient: string;
      hash: string;
    }>;
  return { file, db, writer, rows, add, stored };
}

describe("pass 1's rows in the writer thread", () => {
  it('are hashed there as pass 1 would, a repeat is found mid-pass, and all are read once caught up', async () => {
    const { writer, rows, add, stored } = await threadStaging();
    expect(rows.hashesOwn).toBe(true);
    // More rows than one statement takes, then a repeat of an early one (still in the thread).
    for (let i = 0; i < 200; i++) expect(add(`R-${i}`, i + 2)).toBeUndefined();
    expect(add('R-5', 300)).toMatchObject({ file: 'p.csv', location: 'line 7', order: 5 });
    expect(add('R-200', 301)).toBeUndefined();
    await rows.caughtUp();
    rows.finish();
    const all = stored();
    expect(all).toHaveLength(201);
    for (const r of all) expect(r.hash).toBe(payoutHash(r));
    expect(all.find((r) => r.reference_id === 'R-5')?.amount).toBe('7.50');
    await writer.close();
  });

  it('that the thread cannot write fail the run with the StateError, waited for or not; none is kept', async () => {
    const { file, db, writer, rows, add } = await threadStaging(10);
    // Another program holds the write lock for longer than both waits.
    const other = openDatabase(file);
    other.exec('BEGIN IMMEDIATE');
    try {
      add('A', 2);
      add('B', 3);
      // A repeat waits for the thread in this one: its failure is thrown here.
      const thrown = (() => {
        try {
          add('A', 4);
        } catch (err) {
          return err;
        }
      })();
      expect(thrown).toBeInstanceOf(StateError);
      expect((thrown as StateError).problem).toBe('locked');
      await expect(rows.caughtUp()).rejects.toBeInstanceOf(StateError);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    await writer.close();
    rows.discard();
    expect(db.prepare('SELECT count(*) AS n FROM payouts').get()).toEqual({ n: 0 });
    expect(db.prepare('SELECT count(*) AS n FROM runs').get()).toEqual({ n: 0 });
  });

  it('never caught up are dropped with the run that never began', async () => {
    const { db, writer, rows, add } = await threadStaging();
    for (let i = 0; i < 100; i++) add(`D-${i}`, i + 2);
    await writer.close();
    rows.discard();
    expect(db.prepare('SELECT count(*) AS n FROM payouts').get()).toEqual({ n: 0 });
    expect(db.prepare('SELECT count(*) AS n FROM runs').get()).toEqual({ n: 0 });
  });
});
