/**
 * Streaming UTF-8 check run on the bytes before any parser sees them, so that an ANSI
 * (Windows-1252) export is refused instead of being read as garbled text.
 */
import { isUtf8 } from 'node:buffer';

/** Where and why the bytes stopped being UTF-8 text. */
export interface Utf8Failure {
  /** 1-based line of the first bad byte. */
  line: number;
  /** The first bad byte, or undefined when the text stops in the middle of a character. */
  byte: number | undefined;
  kind: 'invalid' | 'utf16' | 'nul' | 'truncated';
}

/** Length of the sequence a lead byte starts (1 for ASCII and for bytes that start none). */
function sequenceLength(lead: number): number {
  if (lead >= 0xf0) return 4;
  if (lead >= 0xe0) return 3;
  if (lead >= 0xc0) return 2;
  return 1;
}

/** Index of the first byte that does not begin a valid UTF-8 character, or -1. */
export function firstInvalidByte(b: Uint8Array, from = 0, to = b.length): number {
  let i = from;
  while (i < to) {
    const c = b[i]!;
    if (c < 0x80) {
      i += 1;
      continue;
    }
    let n: number;
    if (c >= 0xc2 && c <= 0xdf) n = 1;
    else if (c >= 0xe0 && c <= 0xef) n = 2;
    else if (c >= 0xf0 && c <= 0xf4) n = 3;
    else return i;
    if (i + n >= to) return i;
    const c1 = b[i + 1]!;
    // Overlong forms, UTF-16 surrogates and code points above U+10FFFF.
    if (c === 0xe0 && c1 < 0xa0) return i;
    if (c === 0xed && c1 > 0x9f) return i;
    if (c === 0xf0 && c1 < 0x90) return i;
    if (c === 0xf4 && c1 > 0x8f) return i;
    for (let k = 1; k <= n; k++) if ((b[i + k]! & 0xc0) !== 0x80) return i;
    i += n + 1;
  }
  return -1;
}

/** Counts line feeds in part of a buffer. */
function countLineFeeds(b: Buffer, from: number, to: number): number {
  // Buffer#indexOf is a native scan, several times faster than a byte loop in JS.
  let n = 0;
  for (let i = b.indexOf(10, from); i !== -1 && i < to; i = b.indexOf(10, i + 1)) n++;
  return n;
}

/**
 * Checks a byte stream chunk by chunk. Characters split across chunks are carried over,
 * so a valid file is never refused because of where its chunks happen to end.
 */
export class Utf8Guard {
  private carry: Buffer | undefined;
  private lineFeeds = 0;
  private first = true;
  /** Set once the bytes are known not to be UTF-8 text. */
  failure: Utf8Failure | undefined;

  /** Checks the next chunk; false once the input is known not to be UTF-8. */
  push(chunk: Buffer): boolean {
    if (this.failure) return false;
    if (this.first) {
      this.first = false;
      if (this.refusedAtStart(chunk)) return false;
    }
    let start = 0;
    if (this.carry !== undefined) {
      const carry = this.carry;
      const need = sequenceLength(carry[0]!) - carry.length;
      if (chunk.length < need) {
        this.carry = Buffer.concat([carry, chunk]);
        return true;
      }
      const joined = Buffer.concat([carry, chunk.subarray(0, need)]);
      this.carry = undefined;
      if (!isUtf8(joined)) return this.fail(joined[0], 0);
      start = need;
    }
    const end = completeEnd(chunk, start);
    if (!isUtf8(chunk.subarray(start, end))) {
      const bad = firstInvalidByte(chunk, start, end);
      return this.fail(chunk[bad], countLineFeeds(chunk, 0, bad));
    }
    if (end < chunk.length) this.carry = Buffer.from(chunk.subarray(end));
    this.lineFeeds += countLineFeeds(chunk, start, end);
    return true;
  }

  /** Ends the check; false when the input stopped in the middle of a character. */
  end(): boolean {
    if (this.failure) return false;
    if (this.carry !== undefined) {
      this.failure = { line: this.lineFeeds + 1, byte: undefined, kind: 'truncated' };
      return false;
    }
    return true;
  }

  /** UTF-16 and binary files are refused with their own explanation. */
  private refusedAtStart(chunk: Buffer): boolean {
    const b0 = chunk[0];
    const b1 = chunk[1];
    if ((b0 === 0xff && b1 === 0xfe) || (b0 === 0xfe && b1 === 0xff)) {
      this.failure = { line: 1, byte: b0, kind: 'utf16' };
      return true;
    }
    const nul = chunk.indexOf(0);
    if (nul !== -1) {
      this.failure = { line: countLineFeeds(chunk, 0, nul) + 1, byte: 0, kind: 'nul' };
      return true;
    }
    return false;
  }

  private fail(byte: number | undefined, lineFeedsInChunk: number): false {
    this.failure = { line: this.lineFeeds + lineFeedsInChunk + 1, byte, kind: 'invalid' };
    return false;
  }
}

/** End of the complete characters of a chunk: an unfinished last character is left out. */
function completeEnd(chunk: Buffer, start: number): number {
  const len = chunk.length;
  for (let k = 1; k <= 3 && len - k >= start; k++) {
    const c = chunk[len - k]!;
    if ((c & 0xc0) === 0x80) continue;
    return c >= 0xc0 && sequenceLength(c) > k ? len - k : len;
  }
  return len;
}

/** Explains a failure to the user, with the fix that fits the format. */
export function utf8FailureMessage(f: Utf8Failure, csv: boolean): string {
  const fix = csv
    ? 'save it again as "CSV UTF-8" (in Excel: File > Save As > CSV UTF-8), or convert it to UTF-8'
    : 'save it again with UTF-8 encoding, or convert it to UTF-8';
  switch (f.kind) {
    case 'utf16':
      return `the file is UTF-16 text, not valid UTF-8: ${fix}`;
    case 'nul':
      return `the file is not valid UTF-8 text (it holds NUL bytes, as UTF-16 and binary files do): ${fix}`;
    case 'truncated':
      return `the file is not valid UTF-8: it ends in the middle of a character: ${fix}`;
    default: {
      const hex = (f.byte ?? 0).toString(16).toUpperCase().padStart(2, '0');
      return `the file is not valid UTF-8 (byte 0x${hex} here is not UTF-8; an ANSI or Windows-1252 export looks like this): ${fix}`;
    }
  }
}
