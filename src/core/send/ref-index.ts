import { hash64Lanes } from '../../journal/ids.js';

/** Fingerprints in the first block; each next block doubles, up to BLOCK_MAX. */
const BLOCK_MIN = 1 << 12;
const BLOCK_MAX = 1 << 16;
/** Sorted lists of this many fingerprints or more are found through a directory. */
const DIRECTORY_MIN = 1 << 12;
/** The directory has one entry per value of the top DIRECTORY_BITS bits. */
const DIRECTORY_BITS = 16;

/** Whether this machine stores the low 32-bit word of a 64-bit integer first. */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
/** Index, within an entry's two words, of the word that holds its high 32 bits. */
const HIGH = LITTLE_ENDIAN ? 1 : 0;

/**
 * The references of a run as 64-bit fingerprints (8 bytes a row, where a Map of reference ->
 * payout hash cost about 100). Pass 1 appends one per row, into blocks that never move, and
 * seal() sorts them once; repeats and membership are then answered from the sorted list.
 * A hash table answered "seen before?" as each row arrived, but at 1M rows every insertion
 * missed the cache: it cost 340 ms of a 3.8 s dry run, and 24 bytes a row while it doubled.
 * A fingerprint is never taken for the reference itself: callers confirm by exact text (pass
 * 1 by reading the inputs again, the prior-state check from the spool) before anything is
 * called a duplicate or the same payout.
 */
export class RefIndex {
  /** Before seal: [word 0, word 1] per fingerprint, block after block. */
  private blocks: Uint32Array[] = [];
  /** Fingerprints in the last block. */
  private used = 0;
  /** After seal: every fingerprint, ascending. */
  private sorted: BigUint64Array | undefined;
  /** The sorted fingerprints as words ([word 0, word 1] per entry, HIGH the high one). */
  private words = new Uint32Array(0);
  /** Where each top-bits value starts in the sorted list (when it is large). */
  private directory: Uint32Array | undefined;
  private readonly lanes = new Int32Array(2);
  /** Number of fingerprints added (repeats included). */
  size = 0;
  /** After seal: the number of distinct fingerprints that were added more than once. */
  repeated = 0;

  /** Adds a reference's fingerprint. */
  add(ref: string): void {
    if (this.sorted) throw new Error('internal: the reference index is already sealed');
    let block = this.blocks[this.blocks.length - 1];
    if (block === undefined || this.used * 2 === block.length) {
      const pairs = block === undefined ? BLOCK_MIN : Math.min(BLOCK_MAX, block.length);
      block = new Uint32Array(pairs * 2);
      this.blocks.push(block);
      this.used = 0;
    }
    hash64Lanes(ref, this.lanes);
    block[this.used * 2] = this.lanes[0]!;
    block[this.used * 2 + 1] = this.lanes[1]!;
    this.used += 1;
    this.size += 1;
  }

  /** Sorts the fingerprints (once); has() and isRepeated() need this. */
  seal(): void {
    if (this.sorted) return;
    const n = this.size;
    const sorted = new BigUint64Array(n);
    const words = new Uint32Array(sorted.buffer);
    let at = 0;
    for (let b = 0; b < this.blocks.length; b++) {
      const block = this.blocks[b]!;
      const length = b === this.blocks.length - 1 ? this.used * 2 : block.length;
      words.set(length === block.length ? block : block.subarray(0, length), at);
      at += length;
    }
    this.blocks = [];
    // Native and in place: a fraction of what the hash table's misses cost.
    sorted.sort();
    this.sorted = sorted;
    this.words = words;
    let repeated = 0;
    for (let i = 1; i < n; i++) {
      if (this.same(i - 1, i) && (i < 2 || !this.same(i - 2, i - 1))) repeated += 1;
    }
    this.repeated = repeated;
    if (n >= DIRECTORY_MIN) this.directory = this.buildDirectory();
  }

  /** Whether a reference's fingerprint is held: the reference may be one of ours. */
  has(ref: string): boolean {
    return this.find(ref) !== -1;
  }

  /** Whether a reference's fingerprint was added more than once: it may be a duplicate. */
  isRepeated(ref: string): boolean {
    const i = this.find(ref);
    if (i === -1) return false;
    return (i > 0 && this.same(i - 1, i)) || (i + 1 < this.size && this.same(i, i + 1));
  }

  /** Forgets every fingerprint, so that its memory can be given back. */
  clear(): void {
    this.blocks = [];
    this.used = 0;
    this.sorted = undefined;
    this.words = new Uint32Array(0);
    this.directory = undefined;
    this.size = 0;
    this.repeated = 0;
  }

  /** Whether sorted entries i and j hold the same fingerprint. */
  private same(i: number, j: number): boolean {
    const w = this.words;
    return w[i * 2] === w[j * 2] && w[i * 2 + 1] === w[j * 2 + 1];
  }

  /** For each value of the top DIRECTORY_BITS bits, the first sorted entry with it or above. */
  private buildDirectory(): Uint32Array {
    const shift = 32 - DIRECTORY_BITS;
    const dir = new Uint32Array((1 << DIRECTORY_BITS) + 1);
    const w = this.words;
    let next = 0;
    for (let i = 0; i < this.size; i++) {
      const top = w[i * 2 + HIGH]! >>> shift;
      while (next <= top) dir[next++] = i;
    }
    while (next < dir.length) dir[next++] = this.size;
    return dir;
  }

  /** A sorted entry holding the reference's fingerprint, or -1 (binary search). */
  private find(ref: string): number {
    if (!this.sorted) throw new Error('internal: the reference index is not sealed yet');
    hash64Lanes(ref, this.lanes);
    const high = this.lanes[HIGH]! >>> 0;
    const low = this.lanes[1 - HIGH]! >>> 0;
    const w = this.words;
    let lo = 0;
    let hi = this.size;
    if (this.directory) {
      const top = high >>> (32 - DIRECTORY_BITS);
      lo = this.directory[top]!;
      hi = this.directory[top + 1]!;
    }
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const mh = w[mid * 2 + HIGH]!;
      const ml = w[mid * 2 + 1 - HIGH]!;
      if (mh < high || (mh === high && ml < low)) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.size && w[lo * 2 + HIGH] === high && w[lo * 2 + 1 - HIGH] === low ? lo : -1;
  }
}
