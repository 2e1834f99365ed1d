import { describe, expect, it } from 'vitest';
import { CHAIN_LINKS, type HeldRef, tailOf } from '../../../src/domain/chain.js';
import { lookupSql } from '../../../src/state/journal-sql.js';
import { heldLink, openDb, tempStateDir } from './helpers.js';

// Issue 38: a payout's chain (its original and every retry of it) is followed a bounded
// number of links, each an indexed lookup, so its cost does not grow with the history.

/** A retry `ref` of `of`, in state `kind`. */
function link(ref: string, of: string, kind: HeldRef['kind'] = 'failed'): [string, HeldRef] {
  return [ref, heldLink(ref, of, kind)];
}

describe('a chain of retries', () => {
  it('ends at its last retry, preferring the one that was paid', () => {
    const chain = new Map([link('A', 'O'), link('B', 'A', 'pending'), link('C', 'A', 'success')]);
    expect(tailOf(chain, 'O')?.ref).toBe('C');
    expect(tailOf(chain, 'C')).toBeUndefined();
    expect(tailOf(undefined, 'O')).toBeUndefined();
  });

  it('stops after CHAIN_LINKS links, and on a loop', () => {
    const long = new Map(
      Array.from({ length: 20 }, (_, i) => link(`R${i + 1}`, i === 0 ? 'O' : `R${i}`)),
    );
    expect(tailOf(long, 'O')?.ref).toBe(`R${CHAIN_LINKS}`);
    const loop = new Map([link('A', 'O'), link('B', 'A'), link('A2', 'B'), link('O', 'A2')]);
    expect(tailOf(loop, 'O')?.ref).toBe('A2');
  });

  it('is looked up through the payouts_retry_of index', async () => {
    const db = await openDb(await tempStateDir());
    const plan = db
      .prepare(`EXPLAIN QUERY PLAN ${lookupSql('sqlite', 'main').retries}`)
      .all('["A"]', 'svc') as Array<{ detail: string }>;
    expect(plan.map((p) => p.detail).join('\n')).toMatch(/INDEX payouts_retry_of \(retry_of=\?\)/);
  });
});
