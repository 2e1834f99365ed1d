import { describe, expect, it } from 'vitest';
import { formatProblem, quoteValue } from '../../../src/errors.js';

describe('quoteValue (how problems show a value)', () => {
  it('escapes what JSON leaves raw but a terminal would act on or not show', () => {
    expect(quoteValue('DE\u200B-3')).toBe('"DE\\u200b-3"');
    expect(quoteValue('\u202Eevil\u2028\u00AD\u0085\u007F')).toBe(
      '"\\u202eevil\\u2028\\xad\\x85\\x7f"',
    );
    expect(quoteValue('tag\u{E0041}')).toBe('"tag\\udb40\\udc41"');
    expect(quoteValue('a\tb"\\Ä😀')).toBe('"a\\tb\\"\\\\Ä😀"');
  });

  it('is how formatProblem shows the value of a problem', () => {
    const line = formatProblem({
      file: 'p.csv',
      location: 'line 3',
      field: 'reference_id',
      value: 'X\u009b2J\u200F',
      message: 'why',
    });
    expect(line).toBe('p.csv line 3: reference_id "X\\x9b2J\\u200f": why');
  });
});
