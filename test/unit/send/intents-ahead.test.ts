import { describe, expect, it } from 'vitest';
import { IntentsAhead, type IntentsAheadDeps } from '../../../src/core/send/intents-ahead.js';
import { FakeClock } from '../../helpers/main.js';

/** A journal whose commits resolve only when the test says so. */
class FakeJournal {
  readonly log: string[] = [];
  private readonly pending: Array<{ resolve(): void; reject(err: Error): void }> = [];

  recordIntent(req: number, rows: readonly number[]): Promise<void> {
    this.log.push(`intent ${req} [${rows.join(',')}]`);
    return new Promise((resolve, reject) => this.pending.push({ resolve, reject }));
  }

  recordNotApplied(req: number, refs: string[], why: string): void {
    this.log.push(`not-applied ${req} [${refs.join(',')}] ${why}`);
  }

  /** Commits everything written so far. */
  commit(): void {
    for (const p of this.pending.splice(0)) p.resolve();
  }

  /** Fails every commit waiting. */
  fail(err: Error): void {
    for (const p of this.pending.splice(0)) p.reject(err);
  }
}

function chunk(...rows: number[]) {
  return rows.map((row) => ({ row, payout: { reference_id: `R${row}` } }));
}

function intents(over: Partial<IntentsAheadDeps> = {}) {
  const journal = new FakeJournal();
  const clock = new FakeClock();
  const deps = { journal, clock, firstReq: 7, maxAgeMs: 100, stopping: () => false, ahead: 2 };
  return { journal, clock, intents: new IntentsAhead({ ...deps, ...over }) };
}

/** Lets the check phase run, where intents are written ahead. */
const nextCheck = () => new Promise((r) => setImmediate(r));

describe('IntentsAhead', () => {
  it('returns a request id only once its intent is committed', async () => {
    const { journal, intents: ahead } = intents();
    let req: number | undefined;
    const reserved = ahead.reserve(chunk(0, 1)).then((r) => {
      req = r;
    });
    await nextCheck();
    expect(journal.log).toEqual(['intent 7 [0,1]']);
    expect(req).toBeUndefined();
    journal.commit();
    await reserved;
    expect(req).toBe(7);
  });

  it('writes ahead for the oldest waiting chunks only, and uses that intent when fresh', async () => {
    const { journal, intents: ahead } = intents();
    const a = ahead.waiting(chunk(0));
    ahead.waiting(chunk(1));
    const c = ahead.waiting(chunk(2));
    // Nothing before the check phase: requests started now go out first.
    expect(journal.log).toEqual([]);
    await nextCheck();
    expect(journal.log).toEqual(['intent 7 [0]', 'intent 8 [1]']);
    journal.commit();
    ahead.placed(a);
    expect(await ahead.reserve(a.chunk, a)).toBe(7);
    await nextCheck();
    // A's turn went to C; A's intent was not written twice.
    expect(journal.log).toEqual(['intent 7 [0]', 'intent 8 [1]', 'intent 9 [2]']);
    ahead.placed(c);
  });

  it('withdraws an intent written too long before its place came, and writes it afresh', async () => {
    const { journal, clock, intents: ahead } = intents();
    const a = ahead.waiting(chunk(0, 1));
    await nextCheck();
    journal.commit();
    clock.t += 101;
    ahead.placed(a);
    const reserved = ahead.reserve(a.chunk, a);
    await nextCheck();
    journal.commit();
    expect(await reserved).toBe(8);
    expect(journal.log).toEqual([
      'intent 7 [0,1]',
      'not-applied 7 [R0,R1] not sent: its intent was written too long before it was sent',
      'intent 8 [0,1]',
    ]);
  });

  it('writes nothing ahead with 0 ahead, or once the run is stopping', async () => {
    for (const over of [{ ahead: 0 }, { stopping: () => true }]) {
      const { journal, intents: ahead } = intents(over);
      ahead.waiting(chunk(0));
      await nextCheck();
      expect(journal.log).toEqual([]);
    }
  });

  it('withdraws a written-ahead intent of a chunk not sent, once it is committed', async () => {
    const { journal, intents: ahead } = intents();
    const a = ahead.waiting(chunk(3));
    const b = ahead.waiting(chunk(4));
    await nextCheck();
    const withdrawn = ahead.withdraw(a, 'the run stopped before it was sent');
    await nextCheck();
    expect(journal.log).toEqual(['intent 7 [3]', 'intent 8 [4]']);
    journal.commit();
    await withdrawn;
    ahead.withdrawNow(b, 'the run stopped');
    // Withdrawn once: the ticket no longer holds an intent.
    ahead.withdrawNow(b, 'the run stopped');
    expect(journal.log.slice(2)).toEqual([
      'not-applied 7 [R3] not sent: the run stopped before it was sent',
      'not-applied 8 [R4] not sent: the run stopped',
    ]);
  });

  it("makes a failed commit of a written-ahead intent the chunk's error when it is sent", async () => {
    const { journal, intents: ahead } = intents();
    const a = ahead.waiting(chunk(0));
    await nextCheck();
    journal.fail(new Error('disk full'));
    ahead.placed(a);
    await expect(ahead.reserve(a.chunk, a)).rejects.toThrow('disk full');
  });
});
