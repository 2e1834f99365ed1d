/**
 * The rows of one run by a 32-bit hash of their reference, in memory (8 bytes a slot, at most
 * half the slots used): pass 1 finds a reference used twice with no index in the database to
 * keep up to date. A hash names candidate rows only; the caller compares their references.
 */

/** Slots to start with (a power of two). */
const INITIAL_SLOTS = 1 << 12;

/** FNV-1a over the UTF-16 code units of a reference. */
export function refHash(ref: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < ref.length; i++) {
    h ^= ref.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h | 0;
}

const NONE: readonly number[] = [];

/** An open-addressing table from reference hash to row numbers. */
export class RefIndex {
  /** Row + 1 in each slot; 0 is an empty slot. */
  private rows = new Int32Array(INITIAL_SLOTS);
  private hashes = new Int32Array(INITIAL_SLOTS);
  private used = 0;

  /** Notes that `row` has a reference of hash `hash`. */
  add(hash: number, row: number): void {
    if ((this.used + 1) * 2 > this.rows.length) this.grow();
    this.place(hash, row + 1);
    this.used += 1;
  }

  /** The rows whose reference has this hash, in the order they were added. */
  rowsOf(hash: number): readonly number[] {
    const mask = this.rows.length - 1;
    let found: number[] | undefined;
    for (let i = hash & mask; this.rows[i] !== 0; i = (i + 1) & mask) {
      if (this.hashes[i] !== hash) continue;
      if (found === undefined) found = [];
      found.push(this.rows[i]! - 1);
    }
    return found === undefined ? NONE : found.sort((a, b) => a - b);
  }

  /** Puts a row (stored as row + 1) in the first free slot from its hash's. */
  private place(hash: number, stored: number): void {
    const mask = this.rows.length - 1;
    let i = hash & mask;
    while (this.rows[i] !== 0) i = (i + 1) & mask;
    this.rows[i] = stored;
    this.hashes[i] = hash;
  }

  /** Doubles the table, placing every row again. */
  private grow(): void {
    const rows = this.rows;
    const hashes = this.hashes;
    this.rows = new Int32Array(rows.length * 2);
    this.hashes = new Int32Array(rows.length * 2);
    for (let i = 0; i < rows.length; i++) if (rows[i] !== 0) this.place(hashes[i]!, rows[i]!);
  }
}
