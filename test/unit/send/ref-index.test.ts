import { describe, expect, it } from 'vitest';
import { RefIndex } from '../../../src/core/send/ref-index.js';

describe('RefIndex', () => {
  it('finds every reference added, and no other, across many blocks', () => {
    const index = new RefIndex();
    for (let i = 0; i < 200_000; i++) index.add(`REF-${i}`);
    expect(index.size).toBe(200_000);
    expect(() => index.has('REF-1')).toThrow(/not sealed/);
    index.seal();
    expect(() => index.add('REF-X')).toThrow(/already sealed/);
    expect(index.repeated).toBe(0);
    for (let i = 0; i < 200_000; i += 97) expect(index.has(`REF-${i}`)).toBe(true);
    let strays = 0;
    for (let i = 200_000; i < 300_000; i++) if (index.has(`REF-${i}`)) strays++;
    expect(strays).toBe(0);
    expect(index.isRepeated('REF-5')).toBe(false);
    index.clear();
    expect(index.size).toBe(0);
    expect(() => index.has('REF-1')).toThrow(/not sealed/);
  });

  it('tells which references were added more than once, wherever they sort', () => {
    for (const count of [10, 5_000, 70_000]) {
      const index = new RefIndex();
      for (let i = 0; i < count; i++) index.add(`R-${i}`);
      // Repeats at the start, middle and end of the input, one of them three times.
      for (const ref of ['R-0', `R-${count >> 1}`, `R-${count - 1}`, 'R-0']) index.add(ref);
      index.seal();
      expect(index.repeated).toBe(3);
      expect(index.size).toBe(count + 4);
      for (const ref of ['R-0', `R-${count >> 1}`, `R-${count - 1}`]) {
        expect(index.isRepeated(ref)).toBe(true);
      }
      for (const ref of ['R-1', `R-${count - 2}`, 'absent'])
        expect(index.isRepeated(ref)).toBe(false);
    }
  });

  it('distinguishes texts that differ only in order, case or normalisation', () => {
    const index = new RefIndex();
    for (const t of ['ab', 'ba', 'AB', 'a b', '', 'é', 'e\u0301']) index.add(t);
    index.seal();
    expect(index.size).toBe(7);
    expect(index.repeated).toBe(0);
    expect(index.has('')).toBe(true);
    expect(index.has('A B')).toBe(false);
  });

  it('answers an empty run', () => {
    const index = new RefIndex();
    index.seal();
    expect(index.has('A')).toBe(false);
    expect(index.repeated).toBe(0);
  });
});
