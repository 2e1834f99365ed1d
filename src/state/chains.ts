/**
 * A payout's chain: its original reference and every reference that retries it (a retry
 * file's new_reference_id, linked by `payouts.retry_of`). What the history holds of the
 * chains of a page of staged rows is found a few indexed queries at a time, the same way in
 * both stores: the originals the page's retry rows name, then the references that retry any
 * reference known so far, one link further each query.
 */
import type { PriorRow } from '../domain/history.js';
import type { StagedPayout } from '../domain/records.js';
import { payoutOf } from './run-state.js';
import { CHAIN_LINKS } from '../domain/chain.js';

/** A journal row of an earlier run, as lookupSql's queries give it. */
export type ChainHit = Omit<PriorRow, 'row' | 'payout' | 'via'> & { reference_id: string };

/** One query of a walk: lookupSql's `prior` (the references' own rows) or `retries`. */
export interface ChainQuery {
  query: 'prior' | 'retries';
  /** The references, as one JSON array. */
  refs: string;
}

/** The walk along the chains of a page of staged rows (see the file's comment). */
export class ChainWalk {
  /** For each reference of a chain, the staged rows whose chain it is in. */
  private readonly members = new Map<string, Set<number>>();
  private readonly staged = new Map<number, StagedPayout>();
  private frontier: string[] = [];
  private step = 0;

  constructor(
    page: StagedPayout[],
    private readonly out: PriorRow[],
  ) {
    const originals: string[] = [];
    for (const p of page) {
      this.staged.set(p.row, p);
      this.member(p.reference_id, [p.row]);
      if (p.retry_of) {
        if (!this.members.has(p.retry_of)) originals.push(p.retry_of);
        this.member(p.retry_of, [p.row]);
      }
    }
    this.frontier = [...this.members.keys()];
    this.pendingOriginals = originals;
  }

  private pendingOriginals: string[];

  private member(ref: string, rows: Iterable<number>): void {
    let set = this.members.get(ref);
    if (!set) {
      set = new Set();
      this.members.set(ref, set);
    }
    for (const r of rows) set.add(r);
  }

  /** The next query to make, or undefined when the walk is over. */
  next(): ChainQuery | undefined {
    if (this.pendingOriginals.length) {
      const refs = JSON.stringify(this.pendingOriginals);
      this.pendingOriginals = [];
      return { query: 'prior', refs };
    }
    if (!this.frontier.length || this.step >= CHAIN_LINKS) return undefined;
    this.step += 1;
    const refs = JSON.stringify(this.frontier);
    this.frontier = [];
    return { query: 'retries', refs };
  }

  /** Takes the answer to the query next() gave. */
  take(q: ChainQuery, hits: ChainHit[]): void {
    for (const h of hits) {
      const { reference_id: ref, ...held } = h;
      if (q.query === 'retries') {
        const from = this.members.get(h.retry_of ?? '');
        if (!from) continue;
        if (!this.members.has(ref)) this.frontier.push(ref);
        this.member(ref, [...from]);
      }
      for (const row of this.members.get(ref) ?? []) {
        const p = this.staged.get(row)!;
        // A row's own reference is looked up by the prior query already.
        if (p.reference_id === ref) continue;
        this.out.push({ row, payout: payoutOf(p), ...held, via: ref });
      }
    }
  }
}
