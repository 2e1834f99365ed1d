import { closeSync, mkdirSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { serializePayout } from '../../api/body.js';
import type { PayoutRequest } from '../../api/types.js';

/** A validated payout read back from the spool, ready for a request. */
export interface SpooledPayout {
  payout: PayoutRequest;
  hash: string;
}

/** Bytes written per system call. */
const BLOCK = 1 << 18;
/**
 * Bytes read per system call. The text decoded from one read stays below V8's large-object
 * size, so it dies young: 256 KiB strings went to the old generation and grew the peak RSS.
 */
const READ_BLOCK = 1 << 16;

/**
 * The payouts that pass 1 validated, serialised one per line in input order. Pass 2 builds
 * its requests from here rather than parsing the files again: what is sent is exactly what
 * was validated and confirmed, and a CSV parse per row is saved.
 * A line is: hash TAB JSON(reference_id) TAB amount TAB currency TAB serialised payout.
 * None of these can hold a raw tab or line break (JSON escapes them; the others are checked).
 */
export class PayoutSpool {
  private readonly fd: number;
  /** Encoded lines not yet written: one buffer, so a line costs no string of its own. */
  private readonly buf = Buffer.allocUnsafe(BLOCK);
  private used = 0;
  private finished = false;
  private closed = false;

  private constructor(readonly path: string) {
    this.fd = openSync(path, 'w+', 0o600);
  }

  /** Creates an empty spool in a private folder. */
  static create(dir: string, pid: number): PayoutSpool {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return new PayoutSpool(join(dir, `payouts-${pid}-${Date.now()}.spool`));
  }

  /** Appends one validated payout. */
  add(p: PayoutRequest, hash: string): void {
    if (this.finished) throw new Error('internal: the payout spool is already finished');
    const line = `${hash}\t${JSON.stringify(p.reference_id)}\t${p.amount}\t${p.currency}\t${serializePayout(p)}\n`;
    // A UTF-16 code unit takes at most 3 bytes in UTF-8.
    if (this.used + line.length * 3 > BLOCK) {
      this.flush();
      if (line.length * 3 > BLOCK) {
        writeAll(this.fd, Buffer.from(line));
        return;
      }
    }
    this.used += this.buf.write(line, this.used);
  }

  /** Writes what is buffered; reading may start after this. */
  finish(): void {
    if (this.finished) return;
    this.flush();
    this.finished = true;
  }

  /** Closes and removes the spool file. */
  remove(): void {
    if (!this.closed) {
      this.closed = true;
      closeSync(this.fd);
    }
    rmSync(this.path, { force: true });
  }

  /**
   * Reads the payouts back in order; `each` may return a promise to slow the reading down.
   * The reads are synchronous: the file was just written, so they come from the page cache,
   * and a read through the thread pool cost more in hand-offs than the copy itself.
   */
  async read(each: (p: SpooledPayout) => Promise<void> | undefined | void): Promise<void> {
    let buf = Buffer.allocUnsafe(READ_BLOCK);
    let pos = 0;
    let have = 0;
    for (;;) {
      if (have === buf.length) {
        // One line longer than the buffer (a long description, escaped): make room for it.
        const bigger = Buffer.allocUnsafe(buf.length * 2);
        buf.copy(bigger, 0, 0, have);
        buf = bigger;
      }
      const n = readSync(this.fd, buf, have, buf.length - have, pos);
      pos += n;
      have += n;
      if (n === 0 && have === 0) return;
      // Decode whole lines only, so a character's bytes are never split between two decodes.
      const end = buf.lastIndexOf(10, have - 1);
      if (end < 0) {
        if (n === 0) {
          throw new Error(`internal: the payout spool ${this.path} ends in a partial line`);
        }
        continue;
      }
      const text = buf.toString('utf8', 0, end + 1);
      buf.copy(buf, 0, end + 1, have);
      have -= end + 1;
      let start = 0;
      for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
        const wait = each(parseLine(text, start, nl));
        if (wait) await wait;
        start = nl + 1;
      }
    }
  }

  /** Writes the buffered lines to the file. */
  private flush(): void {
    if (this.used > 0) writeAll(this.fd, this.buf.subarray(0, this.used));
    this.used = 0;
  }
}

/** Writes all of `bytes` at the end of what was written so far. */
function writeAll(fd: number, bytes: Buffer): void {
  let done = 0;
  while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
}

/** Splits one spool line (text[start, end)) into its fields. */
function parseLine(text: string, start: number, end: number): SpooledPayout {
  const t1 = text.indexOf('\t', start);
  const t2 = text.indexOf('\t', t1 + 1);
  const t3 = text.indexOf('\t', t2 + 1);
  const t4 = text.indexOf('\t', t3 + 1);
  if (t1 < 0 || t2 < 0 || t3 < 0 || t4 < 0 || t4 >= end) {
    throw new Error('internal: a malformed line in the payout spool');
  }
  return {
    hash: text.slice(start, t1),
    payout: {
      reference_id: JSON.parse(text.slice(t1 + 1, t2)) as string,
      amount: text.slice(t2 + 1, t3),
      currency: text.slice(t3 + 1, t4),
      recipient: '',
      json: text.slice(t4 + 1, end),
    },
  };
}
