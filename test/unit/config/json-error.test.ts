import { describe, expect, it } from 'vitest';
import { jsonErrorOffset, lineAndColumn } from '../../../src/config/json-error.js';

/** Whether JSON.parse accepts the text. */
function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

describe('jsonErrorOffset', () => {
  it.each([
    '{}',
    ' {"a": [1, -0, 2.5e+3, 1E-2, true, false, null, "x\\u00e9\\n\\"\\\\\\/"]}\n',
    '[]',
    '[ ]',
    '"text"',
    '0',
    '{"profiles":{"default":{"clientId":"id"}}}',
  ])('finds no error in valid JSON %j', (text) => {
    expect(parses(text)).toBe(true);
    expect(jsonErrorOffset(text)).toBeUndefined();
  });

  it.each([
    ['{\n  "a": x}', 9],
    ['{\n "a": 1,\n}', 11],
    ['{"a" 1}', 5],
    ['{"a": "b', 8],
    ['', 0],
    ['{"a": "\u0001"}', 7],
    ['{} x', 3],
    ['[1,]', 3],
    ['01', 1],
    ['{"a":1}}', 7],
    ['"\\x"', 1],
    ['\uFEFF{}', 0],
    ['[', 1],
    ['{"a":tru}', 5],
    ['1.', 1],
    ['{"a":1 "b":2}', 7],
  ])('finds the first error in %j at %i, where JSON.parse fails too', (text, offset) => {
    expect(parses(text)).toBe(false);
    expect(jsonErrorOffset(text)).toBe(offset);
  });
});

describe('lineAndColumn', () => {
  it('counts lines and columns from 1', () => {
    expect(lineAndColumn('ab\ncd\nef', 0)).toEqual({ line: 1, column: 1 });
    expect(lineAndColumn('ab\ncd\nef', 4)).toEqual({ line: 2, column: 2 });
    expect(lineAndColumn('ab\ncd\nef', 8)).toEqual({ line: 3, column: 3 });
  });
});
