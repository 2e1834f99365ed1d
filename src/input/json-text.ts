/**
 * A small JSON reader that keeps number literals as their source text. JSON.parse turns
 * 0.10 into a double and loses how it was written (and, past 15 digits, its value); an
 * amount must reach the request exactly as the file wrote it.
 */

/** A JSON number, kept as written. */
export class JsonNumber {
  constructor(readonly text: string) {}
}

/** A JSON value, numbers kept as their text. */
export type JsonValue = null | boolean | string | JsonNumber | JsonValue[] | JsonObject;

/** A JSON object (without prototype, so a "__proto__" key is just a key). */
export interface JsonObject {
  [key: string]: JsonValue;
}

/** Invalid JSON, with the offset in the text where reading stopped. */
export class JsonSyntaxError extends Error {
  override name = 'JsonSyntaxError';
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const HEX4 = /^[0-9a-fA-F]{4}$/;
const MAX_DEPTH = 100;
const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

/** Reads JSON text value by value; arrays and objects can also be walked item by item. */
export class JsonReader {
  pos = 0;

  constructor(readonly text: string) {}

  /** Moves past JSON whitespace. */
  skipSpace(): void {
    const t = this.text;
    let p = this.pos;
    while (p < t.length) {
      const c = t.charCodeAt(p);
      if (c !== 32 && c !== 10 && c !== 13 && c !== 9) break;
      p++;
    }
    this.pos = p;
  }

  /** The next significant character, or '' at the end of the text. */
  peek(): string {
    this.skipSpace();
    return this.text.charAt(this.pos);
  }

  /** Reads one value. */
  value(depth = 0): JsonValue {
    const c = this.peek();
    switch (c) {
      case '{': {
        const obj: JsonObject = Object.create(null);
        this.eachMember((key) => {
          obj[key] = this.value(depth + 1);
        }, depth);
        return obj;
      }
      case '[': {
        const arr: JsonValue[] = [];
        this.eachItem((v) => arr.push(v), depth);
        return arr;
      }
      case '"':
        return this.string();
      case 't':
        return this.literal('true', true);
      case 'f':
        return this.literal('false', false);
      case 'n':
        return this.literal('null', null);
      case '':
        return this.fail('the text ends where a value was expected');
      default:
        return this.number();
    }
  }

  /** Reads an array, handing each item to `each` rather than keeping them all. */
  eachItem(each: (value: JsonValue, index: number) => void, depth = 0): void {
    this.enter(depth, '[');
    if (this.peek() === ']') {
      this.pos++;
      return;
    }
    for (let index = 0; ; index++) {
      each(this.value(depth + 1), index);
      const c = this.peek();
      this.pos++;
      if (c === ']') return;
      if (c !== ',') this.fail('expected "," or "]" after an array item', this.pos - 1);
    }
  }

  /** Reads an object; `member` is called with each key and must read that key's value. */
  eachMember(member: (key: string) => void, depth = 0): void {
    this.enter(depth, '{');
    if (this.peek() === '}') {
      this.pos++;
      return;
    }
    const seen = new Set<string>();
    for (;;) {
      if (this.peek() !== '"') this.fail('expected a key in double quotes');
      const keyAt = this.pos;
      const key = this.string();
      // Two values for one key leave it open which one was meant: with money, refuse.
      if (seen.has(key))
        this.fail(`the key ${JSON.stringify(key)} appears twice in one object`, keyAt);
      seen.add(key);
      if (this.peek() !== ':') this.fail('expected ":" after a key');
      this.pos++;
      member(key);
      const c = this.peek();
      this.pos++;
      if (c === '}') return;
      if (c !== ',') this.fail('expected "," or "}" after a value in an object', this.pos - 1);
    }
  }

  /** Checks that only whitespace is left. */
  expectEnd(): void {
    if (this.peek() !== '') this.fail('unexpected text after the end of the JSON value');
  }

  /** Throws a syntax error at a position (the current one by default). */
  fail(message: string, at = this.pos): never {
    throw new JsonSyntaxError(message, at);
  }

  private enter(depth: number, open: string): void {
    if (depth >= MAX_DEPTH) this.fail(`nested more than ${MAX_DEPTH} levels deep`);
    if (this.peek() !== open) this.fail(`expected "${open}"`);
    this.pos++;
  }

  private literal<T>(word: string, value: T): T {
    if (!this.text.startsWith(word, this.pos)) this.unexpected();
    this.pos += word.length;
    return value;
  }

  private number(): JsonNumber {
    NUMBER.lastIndex = this.pos;
    const m = NUMBER.exec(this.text);
    if (m === null) this.unexpected();
    const end = this.pos + m[0].length;
    const next = this.text.charCodeAt(end);
    // "01", "1.", "1e" or "12abc": the literal must end where the grammar says it does.
    if (
      (next >= 48 && next <= 57) ||
      next === 46 ||
      next === 101 ||
      next === 69 ||
      isWordChar(next)
    ) {
      this.fail('invalid number: write digits with an optional "." and fraction', this.pos);
    }
    this.pos = end;
    return new JsonNumber(m[0]);
  }

  private string(): string {
    const t = this.text;
    const start = this.pos + 1;
    let p = start;
    let out = '';
    let chunkStart = start;
    for (;;) {
      if (p >= t.length)
        this.fail('a string is not closed: add the closing double quote', start - 1);
      const c = t.charCodeAt(p);
      if (c === 34) {
        out += t.slice(chunkStart, p);
        this.pos = p + 1;
        return out;
      }
      if (c < 32)
        this.fail(
          'a string holds a raw control character or line break: write it as an escape such as \\n',
          p,
        );
      if (c === 92) {
        out += t.slice(chunkStart, p);
        const e = t.charAt(p + 1);
        if (e === 'u') {
          const hex = t.slice(p + 2, p + 6);
          if (!HEX4.test(hex)) this.fail('invalid \\u escape: write four hex digits', p);
          out += String.fromCharCode(Number.parseInt(hex, 16));
          p += 6;
        } else {
          const r = ESCAPES[e];
          if (r === undefined) this.fail(`invalid escape \\${e} in a string`, p);
          out += r;
          p += 2;
        }
        chunkStart = p;
        continue;
      }
      p++;
    }
  }

  private unexpected(): never {
    const ch = this.text.charAt(this.pos);
    return this.fail(`unexpected ${JSON.stringify(ch)} where a value was expected`);
  }
}

function isWordChar(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
}

/** Reads a whole JSON text; throws JsonSyntaxError. */
export function parseJson(text: string): JsonValue {
  const r = new JsonReader(text);
  const v = r.value();
  r.expectEnd();
  return v;
}

/** The 1-based line and column of an offset in a text. */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(offset, text.length);
  for (let i = text.indexOf('\n'); i !== -1 && i < end; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: end - lineStart + 1 };
}
