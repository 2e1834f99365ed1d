import { closeSync, mkdirSync, openSync, readSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { RAW_ITEM_INDENT, rawListItem } from '../../output/output.js';
import {
  NOT_SENT as NOT_SENT_STATUS,
  OUTCOME_UNKNOWN as OUTCOME_UNKNOWN_STATUS,
  type StatusKind,
  statusKind,
} from '../statuses.js';
import { FileAppender } from './file-appender.js';
import type { OutcomeCounts, PayoutOutcome } from './outcome.js';
import { resultItemJson } from './render.js';

/** Status codes of a row, in the low bits of its code byte (0: the run never reached the row). */
const SUCCESS = 1;
const PENDING = 2;
const NOT_SENT = 3;
/** Failed or canceled. */
const FAILED = 4;
/** The CLI's own "outcome unknown". */
const OUTCOME_UNKNOWN = 5;
/** A status the interface does not document. */
const UNDOCUMENTED = 6;
const STATUS_BITS = 7;
const SENT_EARLIER = 8;
const HAS_CHARGES = 16;
/** The row's entry follows the entry of the row before it directly in the file. */
const FOLLOWS = 32;

const BLOCK = 1 << 16;
const CACHED_BLOCKS = 32;
const WRITE_BUFFER = 1 << 18;
/** Entries gathered before they are encoded together (a chunk's worth). */
const PENDING_ROWS = 128;
/** Bytes of --json list decoded at a time: below V8's large-object size, so each text dies young. */
const LIST_CHUNK = 1 << 16;

/** Converts a charge the service sent into minor units of its currency (undefined: not exact). */
export type ChargeMinor = (currency: string, charges: number) => bigint | undefined;

/** The code of a status, by its kind. */
const STATUS_CODES: Record<StatusKind, number> = {
  success: SUCCESS,
  pending: PENDING,
  not_sent: NOT_SENT,
  failed: FAILED,
  outcome_unknown: OUTCOME_UNKNOWN,
  undocumented: UNDOCUMENTED,
};

/** Stands for every undocumented status in statusKinds: exitCodeForStatuses treats them alike. */
const UNDOCUMENTED_SAMPLE = 'undocumented';

/** The start of a result line up to its amount: the texts before it are JSON strings or null. */
const BEFORE_AMOUNT =
  /^\{"reference_id": "(?:[^"\\]|\\.)*", "status": "(?:[^"\\]|\\.)*", "transaction_id": (?:null|"(?:[^"\\]|\\.)*"), "amount": /;

/** Reads a result line (resultItemJson) back into an outcome, its amount as its exact text. */
export function parseResultLine(line: string): PayoutOutcome {
  const m = BEFORE_AMOUNT.exec(line);
  const end = m ? line.indexOf(',', m[0].length) : -1;
  if (!m || end < 0) throw new Error('internal: a malformed line in the outcome store');
  // The amount is written as a bare JSON number (its exact digits): quote it before parsing.
  const quoted = `${line.slice(0, m[0].length)}"${line.slice(m[0].length, end)}"${line.slice(end)}`;
  const o = JSON.parse(quoted) as {
    reference_id: string;
    status: string;
    transaction_id: string | null;
    amount: string;
    currency: string;
    charges: number | null;
    message?: string;
    sent_earlier?: true;
  };
  const out: PayoutOutcome = {
    reference_id: o.reference_id,
    amount: o.amount,
    currency: o.currency,
    status: o.status,
  };
  if (o.transaction_id !== null) out.transaction_id = o.transaction_id;
  if (o.charges !== null) out.charges = o.charges;
  if (o.message !== undefined) out.message = o.message;
  if (o.sent_earlier) out.sent_earlier = true;
  return out;
}

/**
 * The outcome of every row of a send, kept out of the JS heap: each outcome is appended to a
 * private temporary file as its --json result item, laid out as the --json list holds it
 * (rawListItem), and memory holds one code byte and one file offset per row (9 bytes, against
 * ~300 for an outcome object). Rows are numbered in input order; the latest outcome of a row
 * wins. Counts and charge totals are kept as the outcomes arrive, so the results' head needs
 * no pass over the rows. A code bit marks a row whose entry directly follows its
 * predecessor's, so the --json list is copied from the file in runs (a chunk's rows), not
 * row by row.
 */
export class OutcomeStore {
  private readonly fd: number;
  private codes: Uint8Array;
  private offsets: Float64Array;
  /** Rows numbered so far: one past the highest row with an outcome. */
  private rows = 0;
  /** The row whose entry was appended last (-1: none). */
  private lastAppended = -1;
  /** Entries made but not yet encoded, and their rows: offsets are set when they are encoded. */
  private pendingText: string[] = [];
  private pendingRows: number[] = [];
  private readonly out: FileAppender;
  private readonly cache = new Map<number, Buffer>();
  private readonly counts = [0, 0, 0, 0, 0, 0, 0];
  private sentEarlier = 0;
  private readonly chargeTotals = new Map<string, { rows: number; minor: bigint }>();
  private closed = false;
  /** Reference -> row, built only when an input read again no longer matches its rows. */
  private byRef: Map<string, number> | undefined;

  private constructor(
    readonly path: string,
    capacity: number,
    private readonly chargeMinor: ChargeMinor,
  ) {
    this.fd = openSync(path, 'w+', 0o600);
    // A cached block at the end may have been read short, before the written bytes existed.
    this.out = new FileAppender(this.fd, WRITE_BUFFER, (from) => {
      const first = Math.floor(from / BLOCK);
      for (const b of [...this.cache.keys()]) if (b >= first) this.cache.delete(b);
    });
    this.codes = new Uint8Array(Math.max(16, capacity));
    this.offsets = new Float64Array(Math.max(16, capacity));
  }

  /** Creates an empty store in a private folder, sized for `capacity` rows (it grows if need be). */
  static create(
    dir: string,
    pid: number,
    capacity: number,
    chargeMinor: ChargeMinor,
  ): OutcomeStore {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return new OutcomeStore(
      join(dir, `outcomes-${pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}.ndjson`),
      capacity,
      chargeMinor,
    );
  }

  /** Number of rows the run reached (sent, queued or sent earlier). */
  get size(): number {
    let n = 0;
    for (const c of this.counts) n += c;
    return n;
  }

  /** Whether a row has an outcome. */
  has(row: number): boolean {
    return row < this.rows && this.codes[row]! !== 0;
  }

  /** Records a row's outcome; a row sent earlier keeps that mark. */
  set(row: number, outcome: PayoutOutcome): void {
    if (this.closed) throw new Error('internal: the outcome store is closed');
    if (row >= this.codes.length) this.grow(row + 1);
    const prev = row < this.rows ? this.codes[row]! : 0;
    let o = outcome;
    if (prev !== 0) {
      this.counts[prev & STATUS_BITS] = this.counts[prev & STATUS_BITS]! - 1;
      if (prev & SENT_EARLIER) this.sentEarlier -= 1;
      if (prev & HAS_CHARGES) {
        const old = this.get(row);
        if (old?.charges !== undefined) this.addCharges(old.currency, old.charges, -1);
      }
      if (prev & SENT_EARLIER && !o.sent_earlier) o = { ...o, sent_earlier: true };
    }
    let code = STATUS_CODES[statusKind(o.status)];
    this.counts[code] = this.counts[code]! + 1;
    if (o.sent_earlier) {
      code |= SENT_EARLIER;
      this.sentEarlier += 1;
    }
    if (o.charges !== undefined && this.addCharges(o.currency, o.charges, 1)) code |= HAS_CHARGES;
    if (row > 0 && this.lastAppended === row - 1) code |= FOLLOWS;
    // The next row's entry no longer follows this one's, which moves to the end of the file.
    if (prev !== 0 && row + 1 < this.rows) this.codes[row + 1]! &= ~FOLLOWS;
    this.codes[row] = code;
    this.lastAppended = row;
    if (row >= this.rows) this.rows = row + 1;
    // Encoded a chunk's worth at a time: one encoding call per row showed in profiles.
    this.pendingText.push(rawListItem(resultItemJson(o)));
    this.pendingRows.push(row);
    if (this.pendingRows.length >= PENDING_ROWS) this.encodePending();
  }

  /** A row's outcome, read back; undefined when the run never reached the row. */
  get(row: number): PayoutOutcome | undefined {
    if (!this.has(row)) return undefined;
    return parseResultLine(this.line(row));
  }

  /**
   * The outcome of input row `row`, whose reference is `ref`. Falls back to a search by
   * reference if the row holds another one (an input read again that no longer matches).
   */
  forRow(row: number, ref: string): PayoutOutcome | undefined {
    if (this.byRef === undefined) {
      const o = this.get(row);
      if (o === undefined || o.reference_id === ref) return o;
      // Rare and slow: the inputs changed since they were sent; look every row up by reference.
      this.byRef = new Map();
      for (let r = 0; r < this.rows; r++) {
        if (this.codes[r]! !== 0) this.byRef.set(parseResultLine(this.line(r)).reference_id, r);
      }
    }
    const found = this.byRef.get(ref);
    return found === undefined ? undefined : this.get(found);
  }

  /** Every outcome in input order, read back one at a time. */
  *values(): Generator<PayoutOutcome> {
    for (let row = 0; row < this.rows; row++) {
      if (this.codes[row]! !== 0) yield parseResultLine(this.line(row));
    }
  }

  /** The outcomes of rows that succeeded (true) or need attention (false), in input order. */
  *withSuccess(success: boolean): Generator<PayoutOutcome> {
    for (let row = 0; row < this.rows; row++) {
      const code = this.codes[row]!;
      if (code !== 0 && ((code & STATUS_BITS) === SUCCESS) === success) {
        yield parseResultLine(this.line(row));
      }
    }
  }

  /**
   * The --json results list as raw text for Output.printJsonWithRawList: every result in
   * input order, each as rawListItem laid it out. Rows whose entries lie one after another in
   * the file are read as one range into one reused buffer and decoded a block at a time:
   * no per-row string, and no buffer per block left outside the heap for the collector.
   */
  *resultListText(): Generator<string> {
    this.encodePending();
    this.out.flush();
    let buf = Buffer.allocUnsafe(LIST_CHUNK);
    let used = 0;
    let row = 0;
    while (row < this.rows) {
      if (this.codes[row]! === 0) {
        row += 1;
        continue;
      }
      let last = row;
      while (last + 1 < this.rows && this.codes[last + 1]! & FOLLOWS) last += 1;
      let from = this.offsets[row]!;
      const to = this.entryEnd(last);
      while (from < to) {
        if (used === buf.length) {
          // Decode whole entries only, so a character's bytes are never split.
          const end = buf.lastIndexOf(10) + 1;
          if (end === 0) {
            const bigger = Buffer.allocUnsafe(buf.length * 2);
            buf.copy(bigger);
            buf = bigger;
          } else {
            yield buf.toString('utf8', 0, end);
            buf.copy(buf, 0, end, used);
            used -= end;
          }
        }
        const n = readSync(this.fd, buf, used, Math.min(buf.length - used, to - from), from);
        if (n === 0) throw new Error('internal: the outcome store ends in a partial line');
        used += n;
        from += n;
      }
      row = last + 1;
    }
    if (used > 0) yield buf.toString('utf8', 0, used);
  }

  /** Counts by status, as countOutcomes would make them. */
  countsOf(): OutcomeCounts {
    const n = this.counts;
    return {
      success: n[SUCCESS]!,
      pending: n[PENDING]!,
      failed: n[NOT_SENT]! + n[FAILED]!,
      unknown: n[OUTCOME_UNKNOWN]! + n[UNDOCUMENTED]!,
      notSent: n[NOT_SENT]!,
      sentEarlier: this.sentEarlier,
    };
  }

  /** Charge totals per currency in minor units (of max(digits, 6)), for currencies with charges. */
  chargeEntries(): Array<{ currency: string; minor: bigint }> {
    return [...this.chargeTotals.entries()]
      .filter(([, t]) => t.rows > 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([currency, t]) => ({ currency, minor: t.minor }));
  }

  /** One status per kind present, for exitCodeForStatuses. */
  statusKinds(): string[] {
    const out: string[] = [];
    if (this.counts[SUCCESS]) out.push('success');
    if (this.counts[PENDING]) out.push('pending');
    if (this.counts[NOT_SENT]) out.push(NOT_SENT_STATUS);
    if (this.counts[FAILED]) out.push('failed');
    if (this.counts[OUTCOME_UNKNOWN]) out.push(OUTCOME_UNKNOWN_STATUS);
    if (this.counts[UNDOCUMENTED]) out.push(UNDOCUMENTED_SAMPLE);
    return out;
  }

  /** Closes and deletes the file. */
  remove(): void {
    if (!this.closed) {
      this.closed = true;
      closeSync(this.fd);
    }
    rmSync(this.path, { force: true });
  }

  /** Adds (sign 1) or takes back (-1) a charge; false when it is not an exact amount. */
  private addCharges(currency: string, charges: number, sign: 1 | -1): boolean {
    const minor = this.chargeMinor(currency, charges);
    if (minor === undefined) return false;
    const t = this.chargeTotals.get(currency);
    if (t) {
      t.rows += sign;
      t.minor += sign === 1 ? minor : -minor;
    } else this.chargeTotals.set(currency, { rows: 1, minor });
    return true;
  }

  /** Makes room for `rows` rows. */
  private grow(rows: number): void {
    let n = this.codes.length;
    while (n < rows) n *= 2;
    const codes = new Uint8Array(n);
    codes.set(this.codes);
    const offsets = new Float64Array(n);
    offsets.set(this.offsets);
    this.codes = codes;
    this.offsets = offsets;
  }

  /** Encodes the pending entries into the write buffer and sets their rows' offsets. */
  private encodePending(): void {
    const rows = this.pendingRows;
    if (rows.length === 0) return;
    const texts = this.pendingText;
    this.pendingRows = [];
    this.pendingText = [];
    const text = texts.join('');
    let at = this.out.length;
    const bytes = this.out.append(text);
    // As many bytes as UTF-16 units: every entry is ASCII, so its length is its byte count.
    const ascii = bytes === text.length;
    for (let k = 0; k < rows.length; k++) {
      this.offsets[rows[k]!] = at;
      at += ascii ? texts[k]!.length : Buffer.byteLength(texts[k]!);
    }
  }

  /** The --json text of a row's result: its entry without the indent, comma and line break. */
  private line(row: number): string {
    const entry = this.entryBytes(row);
    return entry.toString('utf8', RAW_ITEM_INDENT, entry.length - 1);
  }

  /** Where a row's entry ends in the file: one past its line break. */
  private entryEnd(row: number): number {
    return this.offsets[row]! + this.entryBytes(row).length + 1;
  }

  /** The bytes of a row's entry, without its line break (a view of a cached block when it fits). */
  private entryBytes(row: number): Buffer {
    this.encodePending();
    const start = this.offsets[row]!;
    if (start + 1 > this.out.flushed) this.out.flush();
    let block = Math.floor(start / BLOCK);
    let data = this.block(block);
    let from = start - block * BLOCK;
    let nl = data.indexOf(10, from);
    if (nl >= 0) return data.subarray(from, nl);
    // The line runs on into the next blocks.
    // Copies: reading the next block may reuse the memory of this one.
    const parts: Buffer[] = [Buffer.from(data.subarray(from))];
    for (;;) {
      block += 1;
      data = this.block(block);
      if (data.length === 0) throw new Error('internal: the outcome store ends in a partial line');
      from = 0;
      nl = data.indexOf(10);
      if (nl >= 0) {
        parts.push(data.subarray(0, nl));
        return Buffer.concat(parts);
      }
      parts.push(Buffer.from(data));
    }
  }

  /** One block of the file, from the cache or read. */
  private block(index: number): Buffer {
    const hit = this.cache.get(index);
    if (hit) return hit;
    // The evicted block's memory is reused: a fresh 64 KiB buffer per block read left
    // megabytes of garbage outside the heap for the collector to notice late.
    let data: Buffer;
    if (this.cache.size >= CACHED_BLOCKS) {
      const oldest = this.cache.keys().next().value as number;
      const old = this.cache.get(oldest)!;
      this.cache.delete(oldest);
      data = Buffer.from(old.buffer, old.byteOffset, BLOCK);
    } else data = Buffer.allocUnsafeSlow(BLOCK);
    let got = 0;
    for (;;) {
      const n = readSync(this.fd, data, got, BLOCK - got, index * BLOCK + got);
      if (n === 0) break;
      got += n;
      if (got === BLOCK) break;
    }
    const block = data.subarray(0, got);
    this.cache.set(index, block);
    return block;
  }
}
