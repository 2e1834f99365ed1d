/**
 * Text encodings of payout files. Everything is turned into UTF-8 bytes before a parser sees
 * it, so the CSV and JSON readers (and their fast paths) know only UTF-8.
 */
import { TextDecoder } from 'node:util';
import { Utf8Guard, utf8FailureMessage } from './utf8.js';

/** The encodings a payout file can be read in (--encoding, or a byte-order mark). */
export const INPUT_ENCODINGS = [
  'utf-8',
  'windows-1252',
  'iso-8859-1',
  'utf-16le',
  'utf-16be',
] as const;

export type InputEncoding = (typeof INPUT_ENCODINGS)[number];

/** The encoding a byte-order mark at the start of `b` announces, if any. */
export function byteOrderMark(b: Uint8Array): InputEncoding | undefined {
  if (b[0] === 0xff && b[1] === 0xfe) return 'utf-16le';
  if (b[0] === 0xfe && b[1] === 0xff) return 'utf-16be';
  if (b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) return 'utf-8';
  return undefined;
}

/**
 * The text of a whole small file: UTF-16 when a byte-order mark says so, else UTF-8 (any
 * UTF-8 mark dropped). Throws TypeError on broken UTF-16.
 */
export function decodeWhole(bytes: Buffer): string {
  const mark = byteOrderMark(bytes);
  if (mark === 'utf-16le' || mark === 'utf-16be') {
    return new TextDecoder(mark, { fatal: true }).decode(bytes);
  }
  return bytes.toString('utf8', mark === 'utf-8' ? 3 : 0);
}

/** Whether an encoding is UTF-16, whose spreadsheet exports ("Unicode text") use tabs. */
export function isUtf16(e: InputEncoding): boolean {
  return e === 'utf-16le' || e === 'utf-16be';
}

/**
 * Windows-1252 at 0x80-0x9F (the rest is Latin-1), as the WHATWG Encoding Standard maps it.
 * A table of our own: Node 20.18.3+ and 22.13+ decode TextDecoder('windows-1252') as Latin-1
 * outside streaming mode (nodejs/node#56542), which would turn a "€" into a control character.
 */
const CP1252_HIGH =
  '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f' +
  '\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178';
const C1 = /[\u0080-\u009f]/;
const C1_ALL = /[\u0080-\u009f]/g;

/** Decodes Windows-1252 bytes; a single-byte encoding, so any chunk boundary is a character's. */
export function decodeWindows1252(bytes: Buffer): string {
  const latin1 = bytes.toString('latin1');
  return C1.test(latin1)
    ? latin1.replace(C1_ALL, (c) => CP1252_HIGH[c.charCodeAt(0) - 0x80]!)
    : latin1;
}

/** Where and why decoded text was refused. */
export interface DecodeFailure {
  /** 1-based line of the problem. */
  line: number;
  message: string;
}

/** Counts line feeds in a string. */
function countLineFeeds(s: string, to = s.length): number {
  let n = 0;
  for (let i = s.indexOf('\n'); i !== -1 && i < to; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

const NON_ASCII = /[^\u0000-\u007f]/;

/** A character no payout file holds: a decoder's replacement for bad bytes, or NUL. */
const REFUSED_CHARACTER = /[\uFFFD\u0000]/;

/** The fix a decoding failure names, by the kind of file. */
function saveAgain(csv: boolean): string {
  return csv ? 'save it again as "CSV UTF-8"' : 'save it again with UTF-8 encoding';
}

/**
 * Turns a source's bytes, chunk by chunk, into UTF-8 bytes. The first bytes are held until a
 * byte-order mark can be told; a mark wins over `explicit`, as in browsers. UTF-8 bytes are
 * checked and handed on as they are; other encodings are decoded (carrying a character split
 * across chunks to the next one) and re-encoded.
 */
export class InputDecoder {
  private head: Buffer | undefined = Buffer.alloc(0);
  private guard: Utf8Guard | undefined;
  private utf16: TextDecoder | undefined;
  /** Windows-1252 only: checks whether the bytes are UTF-8 after all (see `end`). */
  private shadow: Utf8Guard | undefined;
  /** Line of the first non-ASCII character, once one is seen. */
  private firstNonAscii: number | undefined;
  private lineFeeds = 0;
  /** The encoding in effect, known once the first bytes are read. */
  encoding: InputEncoding;
  /** Set once the input is refused. */
  failure: DecodeFailure | undefined;

  constructor(
    explicit: InputEncoding | undefined,
    private readonly csv: boolean,
  ) {
    this.encoding = explicit ?? 'utf-8';
  }

  /** The UTF-8 bytes of the next chunk (maybe none yet); undefined once the input is refused. */
  push(chunk: Buffer): Buffer | undefined {
    if (this.failure) return undefined;
    if (this.head !== undefined) {
      const head = this.head.length === 0 ? chunk : Buffer.concat([this.head, chunk]);
      if (head.length < 3) {
        this.head = head;
        return head.subarray(0, 0);
      }
      this.head = undefined;
      this.begin(head);
      return this.convert(head, false);
    }
    return this.convert(chunk, false);
  }

  /** The last UTF-8 bytes; undefined when the input ends refused. */
  end(): Buffer | undefined {
    if (this.failure) return undefined;
    let last: Buffer = Buffer.alloc(0);
    if (this.head !== undefined) {
      last = this.head;
      this.head = undefined;
      this.begin(last);
    }
    return this.convert(last, true);
  }

  private begin(head: Buffer): void {
    this.encoding = byteOrderMark(head) ?? this.encoding;
    if (this.encoding === 'utf-8') this.guard = new Utf8Guard();
    // The UTF-16 decoders drop the byte-order mark themselves.
    else if (isUtf16(this.encoding)) this.utf16 = new TextDecoder(this.encoding);
    else this.shadow = new Utf8Guard();
  }

  private convert(chunk: Buffer, final: boolean): Buffer | undefined {
    const guard = this.guard;
    if (guard !== undefined) {
      if (!(final ? guard.push(chunk) && guard.end() : guard.push(chunk))) {
        this.failure = {
          line: guard.failure!.line,
          message: utf8FailureMessage(guard.failure!, this.csv),
        };
        return undefined;
      }
      return chunk;
    }
    const text =
      this.utf16 === undefined
        ? decodeWindows1252(chunk)
        : this.utf16.decode(chunk, { stream: !final });
    const bad = text.search(REFUSED_CHARACTER);
    if (bad !== -1) {
      this.failure = {
        line: this.lineFeeds + countLineFeeds(text, bad) + 1,
        message: this.refusal(text.charCodeAt(bad) === 0),
      };
      return undefined;
    }
    if (this.shadow !== undefined && !this.stillUtf8(chunk, text, final)) return undefined;
    this.lineFeeds += countLineFeeds(text);
    return Buffer.from(text, 'utf8');
  }

  /**
   * Refuses, at its end, a file read with --encoding windows-1252 whose non-ASCII bytes are
   * all valid UTF-8: it is UTF-8, and reading it as Windows-1252 would send "Ã¼" for "ü".
   */
  private stillUtf8(chunk: Buffer, text: string, final: boolean): boolean {
    const shadow = this.shadow!;
    if (this.firstNonAscii === undefined) {
      const at = text.search(NON_ASCII);
      if (at !== -1) this.firstNonAscii = this.lineFeeds + countLineFeeds(text, at) + 1;
    }
    const utf8 = shadow.push(chunk) && (!final || shadow.end());
    if (!utf8) this.shadow = undefined;
    if (!final || !utf8 || this.firstNonAscii === undefined) return true;
    this.failure = {
      line: this.firstNonAscii,
      message: `is UTF-8 text, not ${this.encoding === 'iso-8859-1' ? 'ISO-8859-1' : 'Windows-1252'}: its letters would be read wrongly (ü as Ã¼): leave out --encoding`,
    };
    return false;
  }

  private refusal(nul: boolean): string {
    const name = this.encoding.toUpperCase().replace('WINDOWS', 'Windows');
    if (nul) {
      const hint = isUtf16(this.encoding)
        ? 'check that this is the payout file'
        : 'if it is UTF-16 text without a byte-order mark, pass --encoding utf-16le; else check that this is the payout file';
      return `holds a NUL character, which text files do not (read as ${name}): ${hint}`;
    }
    // Only a UTF-16 decoder puts U+FFFD in: every byte is a character in Windows-1252.
    return `is not valid ${name} text: it holds a broken character (or U+FFFD, the mark of a character lost in an earlier conversion): ${saveAgain(this.csv)}`;
  }
}
