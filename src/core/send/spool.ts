import { closeSync, createReadStream, mkdirSync, openSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { serializePayout } from '../../api/body.js';
import type { PayoutRequest } from '../../api/types.js';
import { FileAppender } from './file-appender.js';

/** UTF-16 units of lines gathered before they are written together. */
const LINES_BUFFERED = 1 << 16;

/** A validated payout read back from the spool, ready for a request. */
export interface SpooledPayout {
  payout: PayoutRequest;
  hash: string;
}

/**
 * The payouts that pass 1 validated, serialised one per line in input order. Pass 2 builds
 * its requests from here rather than parsing the files again: what is sent is exactly what
 * was validated and confirmed, and a CSV parse per row is saved.
 * A line is: hash TAB JSON(reference_id) TAB amount TAB currency TAB serialised payout.
 * None of these can hold a raw tab or line break (JSON escapes them; the others are checked).
 */
export class PayoutSpool {
  private readonly fd: number;
  private readonly out: FileAppender;
  /** Lines not yet handed to `out`, and their length in UTF-16 units. */
  private lines: string[] = [];
  private linesLength = 0;
  private closed = false;

  private constructor(readonly path: string) {
    this.fd = openSync(path, 'w', 0o600);
    this.out = new FileAppender(this.fd, LINES_BUFFERED * 3);
  }

  /** Creates an empty spool in a private folder. */
  static create(dir: string, pid: number): PayoutSpool {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return new PayoutSpool(join(dir, `payouts-${pid}-${Date.now()}.spool`));
  }

  /** Appends one validated payout. */
  add(p: PayoutRequest, hash: string): void {
    if (this.closed) throw new Error('internal: the payout spool is already finished');
    const line = `${hash}\t${JSON.stringify(p.reference_id)}\t${p.amount}\t${p.currency}\t${serializePayout(p)}\n`;
    this.lines.push(line);
    this.linesLength += line.length;
    if (this.linesLength >= LINES_BUFFERED) this.handOver();
  }

  /** Writes what is buffered and closes the file; reading may start after this. */
  finish(): void {
    if (this.closed) return;
    this.handOver();
    this.out.flush();
    closeSync(this.fd);
    this.closed = true;
  }

  /** Removes the spool file. */
  remove(): void {
    this.finish();
    rmSync(this.path, { force: true });
  }

  /** Reads the payouts back in order; `each` may return a promise to slow the reading down. */
  async read(each: (p: SpooledPayout) => Promise<void> | undefined | void): Promise<void> {
    let carry = '';
    for await (const chunk of createReadStream(this.path, {
      encoding: 'utf8',
      highWaterMark: 1 << 16,
    })) {
      const text = carry + (chunk as string);
      let start = 0;
      for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
        const wait = each(parseLine(text, start, nl));
        if (wait) await wait;
        start = nl + 1;
      }
      carry = text.slice(start);
    }
    if (carry) throw new Error(`internal: the payout spool ${this.path} ends in a partial line`);
  }

  /**
   * Gives the gathered lines to the appender as one text: encoding each short line on its own
   * cost more (a call into Node per line) than joining them first.
   */
  private handOver(): void {
    if (this.lines.length === 0) return;
    this.out.append(this.lines.join(''));
    this.lines = [];
    this.linesLength = 0;
  }
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
      // JSON.parse, even where a slice would do: it makes a flat string, and the engine
      // compares and looks up references, which took longer on slices than this takes.
      reference_id: JSON.parse(text.slice(t1 + 1, t2)) as string,
      amount: text.slice(t2 + 1, t3),
      currency: text.slice(t3 + 1, t4),
      recipient: '',
      json: text.slice(t4 + 1, end),
    },
  };
}
