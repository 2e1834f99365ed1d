/** A syntax error at an offset of JSON text. */
class JsonSyntaxAt extends Error {
  constructor(readonly offset: number) {
    super(`JSON syntax error at offset ${offset}`);
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const ESCAPE = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/y;
const LITERALS = ['true', 'false', 'null'];

/**
 * Walks JSON text (RFC 8259) to find where it first breaks the grammar. V8's JSON.parse
 * names no position for an unexpected token, and quotes the text instead, which may hold a
 * secret: this gives the offset without any text.
 */
class JsonScanner {
  pos = 0;
  constructor(private readonly text: string) {}

  fail(): never {
    throw new JsonSyntaxAt(this.pos);
  }

  space(): void {
    while (/[ \t\n\r]/.test(this.text[this.pos] ?? '')) this.pos += 1;
  }

  expect(char: string): void {
    if (this.text[this.pos] !== char) this.fail();
    this.pos += 1;
  }

  value(): void {
    this.space();
    const c = this.text[this.pos];
    if (c === '{') this.members('}', () => this.member());
    else if (c === '[') this.members(']', () => this.value());
    else if (c === '"') this.string();
    else this.scalar();
    this.space();
  }

  /** An object's or array's items after the opening bracket, up to `close`. */
  members(close: string, item: () => void): void {
    this.pos += 1;
    this.space();
    if (this.text[this.pos] === close) {
      this.pos += 1;
      return;
    }
    for (;;) {
      item();
      if (this.text[this.pos] === close) break;
      this.expect(',');
    }
    this.pos += 1;
  }

  member(): void {
    this.space();
    this.string();
    this.space();
    this.expect(':');
    this.value();
  }

  string(): void {
    this.expect('"');
    for (;;) {
      const c = this.text[this.pos];
      if (c === undefined || c < ' ') this.fail();
      if (c === '"') break;
      if (c === '\\') {
        ESCAPE.lastIndex = this.pos;
        if (!ESCAPE.test(this.text)) this.fail();
        this.pos = ESCAPE.lastIndex;
      } else this.pos += 1;
    }
    this.pos += 1;
  }

  scalar(): void {
    const literal = LITERALS.find((l) => this.text.startsWith(l, this.pos));
    if (literal !== undefined) {
      this.pos += literal.length;
      return;
    }
    NUMBER.lastIndex = this.pos;
    if (!NUMBER.test(this.text)) this.fail();
    this.pos = NUMBER.lastIndex;
  }
}

/** The offset of the first JSON syntax error in `text`, or undefined when it is valid JSON. */
export function jsonErrorOffset(text: string): number | undefined {
  const scanner = new JsonScanner(text);
  try {
    scanner.value();
    if (scanner.pos < text.length) scanner.fail();
    return undefined;
  } catch (error) {
    if (error instanceof JsonSyntaxAt) return error.offset;
    // Nesting too deep for the call stack: the position is unknown.
    if (error instanceof RangeError) return undefined;
    throw error;
  }
}

/** The 1-based line and column of an offset in `text`. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf('\n') + 1;
  return { line: before.split('\n').length, column: offset - lineStart + 1 };
}
