import { closeSync, createReadStream, mkdirSync, openSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { serializePayout } from '../../api/body.js';
import type { PayoutRequest } from '../../api/types.js';
import { FileAppender } from './file-appender.js';

/** UTF-16 units of lines gathered before they are written together. */
const LINES_BUFFERED = 1 << 16;

/**
 * UTF-16 units of spool text a run may keep in memory when its inputs are small (see
 * spoolMemoryBudget): a 100k-row file spools about 16 Mi. Past it the text goes to the file.
 */
export const SPOOL_MEMORY_LIMIT = 32 << 20;

/** Input bytes up to which the spool is kept in memory: 8 MiB of CSV is about 140k rows. */
const SMALL_INPUT_BYTES = 8 << 20;

/**
 * How much spool text a run may keep in memory, from the size of its inputs. Small runs keep
 * it all: writing it out and reading it back cost a tenth of a 100k-row send's main thread
 * (about 110 ms of 1.6 s). Large runs use the file from the start, so their peak memory stays
 * what the reference index needs, whatever their size.
 */
export function spoolMemoryBudget(inputBytes: number): number {
  return inputBytes <= SMALL_INPUT_BYTES ? SPOOL_MEMORY_LIMIT : 0;
}

/** A validated payout read back from the spool, ready for a request. */
export interface SpooledPayout {
  payout: PayoutRequest;
  hash: string;
}

/**
 * The payouts that pass 1 validated, serialised one per line in input order. Pass 2 builds
 * its requests from here rather than parsing the files again: what is sent is exactly what
 * was validated and confirmed, and a CSV parse per row is saved. Small runs keep the lines in
 * memory, in blocks; large ones write them to a private file, which keeps memory flat.
 * A line is: hash TAB JSON(reference_id) TAB amount TAB currency TAB serialised payout.
 * None of these can hold a raw tab or line break (JSON escapes them; the others are checked).
 */
export class PayoutSpool {
  /** The file, once the spool uses one (from the start, or when memory ran out). */
  private file: { fd: number; out: FileAppender } | undefined;
  /** Blocks of whole lines kept in memory, while the spool has no file. */
  private blocks: string[] | undefined = [];
  private held = 0;
  /** Lines not yet handed over, and their length in UTF-16 units. */
  private lines: string[] = [];
  private linesLength = 0;
  private closed = false;

  private constructor(
    readonly path: string,
    private readonly memoryLimit: number,
  ) {
    if (memoryLimit <= 0) this.useFile();
  }

  /**
   * Creates an empty spool that keeps up to `memoryLimit` UTF-16 units of text in memory
   * (spoolMemoryBudget); past that, or with 0, it is a file in a private folder.
   */
  static create(dir: string, pid: number, memoryLimit = 0): PayoutSpool {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return new PayoutSpool(join(dir, `payouts-${pid}-${Date.now()}.spool`), memoryLimit);
  }

  /** Whether the spool went to a file (for tests). */
  get onDisk(): boolean {
    return this.file !== undefined;
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
    if (this.file) {
      this.file.out.flush();
      closeSync(this.file.fd);
    }
    this.closed = true;
  }

  /** Removes the spool file and lets go of the text held in memory. */
  remove(): void {
    this.finish();
    this.blocks = undefined;
    if (this.file) rmSync(this.path, { force: true });
  }

  /** Reads the payouts back in order; `each` may return a promise to slow the reading down. */
  async read(each: (p: SpooledPayout) => Promise<void> | undefined | void): Promise<void> {
    if (this.blocks) {
      for (const text of this.blocks) {
        let start = 0;
        for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
          const wait = each(parseLine(text, start, nl));
          if (wait) await wait;
          start = nl + 1;
        }
      }
      return;
    }
    if (!this.file) throw new Error('internal: the payout spool was removed');
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
    const text = this.lines.join('');
    this.lines = [];
    this.linesLength = 0;
    if (this.blocks && this.held + text.length <= this.memoryLimit) {
      this.blocks.push(text);
      this.held += text.length;
      return;
    }
    this.useFile().out.append(text);
  }

  /** The spool's file, created on first use with whatever was held in memory so far. */
  private useFile(): { fd: number; out: FileAppender } {
    if (this.file) return this.file;
    const fd = openSync(this.path, 'w', 0o600);
    const file = { fd, out: new FileAppender(fd, LINES_BUFFERED * 3) };
    this.file = file;
    for (const block of this.blocks ?? []) file.out.append(block);
    this.blocks = undefined;
    this.held = 0;
    return file;
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
  // The serialised payout carries every field; the amount comes from its own column, as
  // text, so that it never passes through a double.
  const wire = JSON.parse(text.slice(t4 + 1, end)) as { recipient: string; description?: string };
  const payout: PayoutRequest = {
    reference_id: JSON.parse(text.slice(t1 + 1, t2)) as string,
    amount: text.slice(t2 + 1, t3),
    currency: text.slice(t3 + 1, t4),
    recipient: wire.recipient,
  };
  if (wire.description !== undefined) payout.description = wire.description;
  return { hash: text.slice(start, t1), payout };
}
