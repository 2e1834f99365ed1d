import { describe, expect, it } from 'vitest';
import { priorRows, RunIntake } from '../../../src/state/index.js';
import { RefIndex, refHash } from '../../../src/state/ref-index.js';
import { openDb, openRun, rowsOf, SERVICE, tempStateDir } from './helpers.js';

/** A valid row of reference `ref` on line `line` of payouts.csv. */
function row(ref: string, line: number) {
  return {
    reference_id: ref,
    file: 'payouts.csv',
    line,
    amount: '1.00',
    currency: 'EUR',
    recipient: 'a@example.com',
    hash: '',
  };
}

describe('RefIndex', () => {
  it('gives every row of a hash, however many share it, and keeps them through growth', () => {
    const index = new RefIndex();
    for (let i = 0; i < 10_000; i++) index.add(i % 7 === 0 ? 42 : refHash(`R-${i}`), i);
    const shared = index.rowsOf(42);
    expect(shared.length).toBe(Math.ceil(10_000 / 7));
    expect(shared.slice(0, 3)).toEqual([0, 7, 14]);
    expect(index.rowsOf(refHash('R-9999'))).toContain(9999);
    expect(index.rowsOf(refHash('never added'))).toEqual([]);
  });
});

describe('RunIntake', () => {
  for (const kind of ['state.db', 'dry run'] as const) {
    it(`finds a reference used again far apart, and where it was first (${kind})`, async () => {
      const rows =
        kind === 'dry run'
          ? RunIntake.scratch()
          : RunIntake.begin(await openDb(await tempStateDir()), {
              pid: process.pid,
              inputs: ['payouts.csv'],
              now: new Date(),
            });
      // One assertion for all the rows: none of them was seen before.
      const seen: number[] = [];
      for (let i = 0; i < 25_000; i++)
        if (rows.add(row(`R-${i}`, i + 2)) !== undefined) seen.push(i);
      expect(seen).toEqual([]);
      expect(rows.add(row('R-3', 25_002))).toEqual({
        file: 'payouts.csv',
        location: 'line 5',
        order: 3,
      });
      // One row later, still waiting to be written: found all the same.
      expect(rows.add(row('NEW', 25_003))).toBeUndefined();
      expect(rows.add(row('NEW', 25_004))?.location).toBe('line 25003');
      rows.finish();
      // Sealed, state.db's rows are found through its reference index instead.
      rows.seal();
      expect(rows.count).toBe(25_001);
      expect(rows.sighting('R-24999')).toEqual({
        file: 'payouts.csv',
        location: 'line 25001',
        order: 24_999,
      });
      expect(rows.has('R-25000')).toBe(false);
      rows.discard();
    });
  }

  it("writes pass 1's batches unsynced, and state.db's commits are synced again once sealed", async () => {
    const db = await openDb(await tempStateDir());
    const sync = () =>
      (db.prepare('PRAGMA synchronous').get() as { synchronous: number }).synchronous;
    expect(sync()).toBe(2);
    const rows = RunIntake.begin(db, {
      pid: process.pid,
      inputs: ['payouts.csv'],
      now: new Date(),
    });
    expect(sync()).toBe(1);
    for (let i = 1; i <= 3; i++) rows.add(row(`S-${i}`, i + 1));
    rows.finish();
    rows.seal();
    expect(sync()).toBe(2);
    // A run that stops in pass 1 leaves the connection synced as well.
    const stopped = RunIntake.begin(db, { pid: process.pid, inputs: ['b.csv'], now: new Date() });
    expect(sync()).toBe(1);
    stopped.discard();
    expect(sync()).toBe(2);
    db.close();
  });

  it("counts refused and repeated rows in a row's place in pass 1's order", () => {
    const rows = RunIntake.scratch();
    rows.add(row('A', 2));
    rows.refused('X', { file: 'payouts.csv', location: 'line 3' });
    rows.add(row('B', 4));
    expect(rows.add(row('A', 5))?.order).toBe(0);
    rows.add(row('C', 6));
    expect(rows.sighting('B')?.order).toBe(2);
    expect(rows.sighting('X')?.order).toBe(1);
    expect(rows.sighting('C')?.order).toBe(4);
    rows.discard();
  });

  it('keeps a place that is not a line as its text', () => {
    const rows = RunIntake.scratch();
    const { line: _line, ...p } = row('J-1', 0);
    rows.add({ ...p, file: 'payouts.json', location: 'item 1' });
    expect(rows.sighting('J-1')).toEqual({ file: 'payouts.json', location: 'item 1', order: 0 });
    rows.discard();
  });
});

describe('priorRows of a dry run', () => {
  it("gives a dry run's rows that the service's runs sent, in flight or answered", async () => {
    const stateDir = await tempStateDir();
    const db = await openDb(stateDir);
    const sent = openRun(db, ['A', 'B', 'C']);
    await sent.recordIntent(1, rowsOf(sent, 'A', 'B'));
    sent.recordOutcome(1, [{ ref: 'A', status: 'success' }]);
    await sent.close();
    // Another service's run of D says nothing about this service.
    const other = openRun(db, ['D'], { serviceKey: 'https://other.example.com' });
    await other.recordIntent(1, rowsOf(other, 'D'));
    await other.close();

    const rows = RunIntake.scratch();
    // Past the first page of the lookup, and with a chunk cut short by a repeat's lookup.
    for (let i = 0; i < 2500; i++) rows.add(row(`F-${i}`, i + 2));
    rows.add(row('F-7', 2502));
    for (const [i, ref] of ['D', 'C', 'B', 'A'].entries()) rows.add(row(ref, i + 2503));
    // state.db stays open in this process meanwhile, as it would in another.
    const earlier = priorRows(rows, SERVICE, stateDir);
    expect(
      earlier.map((r) => [r.row, r.payout.reference_id, r.state, r.run_id, r.payout.amount]),
    ).toEqual([
      [2502, 'B', 'in_flight', sent.runId, '1.00'],
      [2503, 'A', 'done', sent.runId, '1.00'],
    ]);
    // Nothing is known of a service no run of the folder sent to, nor of an empty folder.
    expect(priorRows(rows, 'https://none.example.com', stateDir)).toEqual([]);
    expect(priorRows(rows, SERVICE, await tempStateDir())).toEqual([]);
    rows.discard();
  });
});
