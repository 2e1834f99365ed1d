import { describe, expect, it } from 'vitest';
import { waitedLine } from '../../../src/core/send/wait-lock.js';

describe('the line when --wait ends', () => {
  it('says how long the other send took, in seconds, then minutes', () => {
    expect(waitedLine('ana@host', 31_400)).toBe(
      'The other send (ana@host) finished after 31 s; this one goes on',
    );
    expect(waitedLine('ana@host', 200)).toContain('after 1 s;');
    expect(waitedLine('ana@host', 185_000)).toContain('after 3 min 5 s;');
  });

  it('counts the sends that went first, named or only counted', () => {
    expect(waitedLine(['ana@a', 'bob@b'], 2_000)).toBe(
      'The 2 sends ahead of this one finished after 2 s; this one goes on',
    );
    expect(waitedLine(3, 2_000)).toBe(
      'The 3 sends ahead of this one finished after 2 s; this one goes on',
    );
  });
});
