import { describe, expect, it } from 'vitest';
import {
  JsonNumber,
  JsonSyntaxError,
  lineColumn,
  parseJson,
} from '../../../src/input/json-text.js';

/** The syntax error a text gives, or undefined. */
function syntaxError(text: string): JsonSyntaxError | undefined {
  try {
    parseJson(text);
    return undefined;
  } catch (err) {
    if (err instanceof JsonSyntaxError) return err;
    throw err;
  }
}

describe('parseJson', () => {
  it('keeps number literals as their text', () => {
    const v = parseJson(
      '[0.10, 1234567.89, -0, 1E+2, 100.000, 123456789012345678901234567890]',
    ) as JsonNumber[];
    expect(v.map((n) => n.text)).toEqual([
      '0.10',
      '1234567.89',
      '-0',
      '1E+2',
      '100.000',
      '123456789012345678901234567890',
    ]);
    expect(v[0]).toBeInstanceOf(JsonNumber);
  });

  it('reads the other JSON values like JSON.parse', () => {
    const text = '{"a": [true, false, null, "x\\n\\"\\u00e9\\ud83e\\udd84\\/"], "b": {}, "c": []}';
    expect(JSON.parse(JSON.stringify(parseJson(text)))).toEqual(JSON.parse(text));
  });

  it('refuses what JSON.parse refuses', () => {
    for (const bad of [
      '01',
      '1.',
      '.5',
      '+1',
      '1e',
      '[1,]',
      '{"a":1,}',
      "{'a':1}",
      '"a\nb"',
      '"\\x"',
      '[1 2]',
      'nul',
      '{"a"}',
      '"abc',
      '1 2',
      'NaN',
      '-',
      '"\\u12G4"',
    ]) {
      expect(() => JSON.parse(bad), bad).toThrow();
      expect(syntaxError(bad), bad).toBeInstanceOf(JsonSyntaxError);
    }
  });

  it('gives the offset where reading stopped', () => {
    expect(syntaxError('[1,\n  2\n  3]')!.offset).toBe(10);
    expect(syntaxError('{"a": 1, "a": 2}')!.message).toBe(
      'the key "a" appears twice in one object',
    );
  });

  it('refuses very deep nesting instead of overflowing the stack', () => {
    expect(syntaxError('['.repeat(5000))!.message).toMatch(/nested more than 100 levels/);
  });
});

describe('lineColumn', () => {
  it('converts an offset to a 1-based line and column', () => {
    const text = 'ab\ncd\n\nef';
    expect(lineColumn(text, 0)).toEqual({ line: 1, column: 1 });
    expect(lineColumn(text, 4)).toEqual({ line: 2, column: 2 });
    expect(lineColumn(text, 7)).toEqual({ line: 4, column: 1 });
  });
});
