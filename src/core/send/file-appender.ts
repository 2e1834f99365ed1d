import { writeSync } from 'node:fs';

/**
 * Text appended to a file through one reused buffer, written out when full, so that a run's
 * temporary files cost a write call per block, not per line, and no Buffer per block is left
 * for the collector. Callers hand it sizeable texts (lines joined a block at a time): one call
 * per short line cost more, in calls into Node, than the join.
 */
export class FileAppender {
  private readonly buf: Buffer;
  private used = 0;
  /** Bytes written to the file so far. */
  private written = 0;

  /**
   * Appends to the empty file open as `fd`, through a buffer of `size` bytes. `onWrite` hears
   * where each write out starts, for callers that cache what they read back.
   */
  constructor(
    private readonly fd: number,
    size: number,
    private readonly onWrite?: (from: number) => void,
  ) {
    this.buf = Buffer.allocUnsafe(size);
  }

  /** Bytes appended so far, buffered ones included: where the next text starts in the file. */
  get length(): number {
    return this.written + this.used;
  }

  /** Bytes already in the file: reading below this needs no flush. */
  get flushed(): number {
    return this.written;
  }

  /** Appends text and returns its length in bytes. */
  append(text: string): number {
    // A UTF-16 code unit takes at most 3 bytes in UTF-8.
    if (this.used + text.length * 3 > this.buf.length) {
      this.flush();
      if (text.length * 3 > this.buf.length) {
        const bytes = Buffer.from(text);
        this.writeOut(bytes, bytes.length);
        return bytes.length;
      }
    }
    const n = this.buf.write(text, this.used);
    this.used += n;
    return n;
  }

  /** Writes out what is buffered. */
  flush(): void {
    if (this.used === 0) return;
    this.writeOut(this.buf, this.used);
    this.used = 0;
  }

  /** Writes bytes at the end of the file, however many write calls it takes. */
  private writeOut(bytes: Buffer, length: number): void {
    let done = 0;
    while (done < length) {
      done += writeSync(this.fd, bytes, done, length - done, this.written + done);
    }
    this.onWrite?.(this.written);
    this.written += length;
  }
}
