/**
 * Streaming UTF-8 check run on the bytes before any parser sees them, so that an ANSI
 * (Windows-1252) export read without --encoding is refused instead of read as garbled text.
 */
import { isUtf8 } from 'node:buffer';

/** Where and why the bytes stopped being UTF-8 text. */
export interface Utf8Failure {
  /** 1-based line of the first bad byte. */
  line: number;
  /** The first bad byte, or undefined when the text stops in the middle of a character. */
  byte: number | undefined;
  /** 0-based offset of that byte in the file (of the unfinished character's first byte). */
  offset: number;
  kind: 'invalid' | 'nul' | 'truncated';
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
  /** Bytes pushed before the current chunk. */
  private offset = 0;
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
    const ok = this.check(chunk);
    this.offset += chunk.length;
    return ok;
  }

  private check(chunk: Buffer): boolean {
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
      if (!isUtf8(joined)) return this.fail(joined[0], -carry.length, 0);
      start = need;
    }
    const end = completeEnd(chunk, start);
    if (!isUtf8(chunk.subarray(start, end))) {
      const bad = firstInvalidByte(chunk, start, end);
      return this.fail(chunk[bad], bad, countLineFeeds(chunk, 0, bad));
    }
    if (end < chunk.length) this.carry = Buffer.from(chunk.subarray(end));
    this.lineFeeds += countLineFeeds(chunk, start, end);
    return true;
  }

  /** Ends the check; false when the input stopped in the middle of a character. */
  end(): boolean {
    if (this.failure) return false;
    if (this.carry !== undefined) {
      const offset = this.offset - this.carry.length;
      this.failure = { line: this.lineFeeds + 1, byte: undefined, offset, kind: 'truncated' };
      return false;
    }
    return true;
  }

  /** UTF-16 without a byte-order mark, and binary files, are refused with their own explanation. */
  private refusedAtStart(chunk: Buffer): boolean {
    const nul = chunk.indexOf(0);
    if (nul === -1) return false;
    const line = countLineFeeds(chunk, 0, nul) + 1;
    this.failure = { line, byte: 0, offset: nul, kind: 'nul' };
    return true;
  }

  /** Records a bad byte at `at` in the current chunk (negative: in the carried bytes). */
  private fail(byte: number | undefined, at: number, lineFeedsInChunk: number): false {
    const line = this.lineFeeds + lineFeedsInChunk + 1;
    this.failure = { line, byte, offset: this.offset + at, kind: 'invalid' };
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

/** The byte at an offset, as messages show it: "byte 0xE4 at offset 57". */
function byteAt(f: Utf8Failure): string {
  const hex = (f.byte ?? 0).toString(16).toUpperCase().padStart(2, '0');
  return `byte 0x${hex} at offset ${f.offset}`;
}

/** Explains a failure to the user, with the fixes that fit the format. */
export function utf8FailureMessage(f: Utf8Failure, csv: boolean): string {
  const save = csv ? 'or save it as "CSV UTF-8"' : 'or save it with UTF-8 encoding';
  const legacy = csv
    ? 'if the file was saved as Windows-1252 or ISO-8859-1 (Excel "CSV" on Windows), pass --encoding windows-1252'
    : 'if the file was written in Windows-1252 or ISO-8859-1, pass --encoding windows-1252';
  switch (f.kind) {
    case 'nul':
      return `not valid UTF-8 text (${byteAt(f)}: UTF-16 text without a byte-order mark, and binary files, hold NUL bytes): if it is UTF-16 text, pass --encoding utf-16le; ${save}`;
    case 'truncated':
      return `not valid UTF-8: it ends in the middle of a character (at offset ${f.offset}): ${legacy}; ${save}`;
    default:
      return `not valid UTF-8 (${byteAt(f)}): ${legacy}; ${save}`;
  }
}
