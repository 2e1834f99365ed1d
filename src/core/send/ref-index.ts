import { hash64Lanes } from '../../journal/ids.js';
import { collectGarbage } from './collect.js';

/** Int32 slots of a table big enough that dropping it is worth a full collection (4 MiB). */
const LARGE_TABLE = 1 << 20;

/**
 * The references of a send as 64-bit fingerprints in one flat typed array (16 to 32 bytes a
 * row, where a Map of reference -> payout hash cost about 100 and grew the old generation). It
 * answers "maybe one of ours": a fingerprint is never taken for the reference itself, so
 * callers confirm by exact text (pass 1 by reading the inputs again, the prior-state check
 * from the spool) before anything is called a duplicate or the same payout.
 */
export class RefIndex {
  /** Pairs of 32-bit halves side by side, so a probe touches one cache line; (0, 0) is empty. */
  private slots: Int32Array;
  private mask: number;
  private readonly lanes = new Int32Array(2);
  private h1 = 0;
  private h2 = 0;
  /** Number of distinct fingerprints held. */
  size = 0;

  constructor(capacity = 1 << 12) {
    let count = 1;
    while (count < capacity * 2) count <<= 1;
    this.slots = new Int32Array(count * 2);
    this.mask = count - 1;
  }

  /** Adds a reference's fingerprint; false when that fingerprint was already there. */
  add(ref: string): boolean {
    this.fingerprint(ref);
    const h1 = this.h1;
    const h2 = this.h2;
    const i = this.find(h1, h2);
    if (this.slots[i * 2] !== 0 || this.slots[i * 2 + 1] !== 0) return false;
    this.slots[i * 2] = h1;
    this.slots[i * 2 + 1] = h2;
    this.size += 1;
    if (this.size * 2 > this.mask) this.grow();
    return true;
  }

  /** Whether a reference's fingerprint is held: the reference may be one of ours. */
  has(ref: string): boolean {
    this.fingerprint(ref);
    const i = this.find(this.h1, this.h2);
    return this.slots[i * 2] !== 0 || this.slots[i * 2 + 1] !== 0;
  }

  /** Forgets every fingerprint and gives the memory back. */
  clear(): void {
    this.slots = new Int32Array(16);
    this.mask = 7;
    this.size = 0;
  }

  /** Sets h1, h2 to a reference's fingerprint; (0, 0) becomes (0, 1), as (0, 0) marks no slot. */
  private fingerprint(ref: string): void {
    const lanes = this.lanes;
    hash64Lanes(ref, lanes);
    this.h1 = lanes[0]!;
    const h2 = lanes[1]!;
    this.h2 = this.h1 === 0 && h2 === 0 ? 1 : h2;
  }

  /** The slot holding a fingerprint, or the empty slot where it would go (linear probing). */
  private find(h1: number, h2: number): number {
    const slots = this.slots;
    let i = h1 & this.mask;
    for (;;) {
      const a = slots[i * 2]!;
      const b = slots[i * 2 + 1]!;
      if ((a === 0 && b === 0) || (a === h1 && b === h2)) return i;
      i = (i + 1) & this.mask;
    }
  }

  /** Doubles the table and re-inserts every fingerprint. */
  private grow(): void {
    const old = this.slots;
    const count = (this.mask + 1) * 2;
    this.slots = new Int32Array(count * 2);
    this.mask = count - 1;
    for (let i = 0; i < old.length; i += 2) {
      const a = old[i]!;
      const b = old[i + 1]!;
      if (a === 0 && b === 0) continue;
      const j = this.find(a, b);
      this.slots[j * 2] = a;
      this.slots[j * 2 + 1] = b;
    }
    // The old table is garbage now; left to V8, it stays resident until a full collection.
    if (old.length >= LARGE_TABLE) collectGarbage();
  }
}
