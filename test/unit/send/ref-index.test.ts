import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../../src/core/send/collect.js';
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

describe('RefIndex memory', () => {
  const MiB = 2 ** 20;
  const arrayBuffers = () => process.memoryUsage().arrayBuffers;
  /** Waits (up to 5 s) for V8's background sweeper to release what a collection freed. */
  async function arrayBuffersBelow(limit: number): Promise<number> {
    for (let waited = 0; arrayBuffers() >= limit && waited < 5000; waited += 10) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return arrayBuffers();
  }

  it('gives the memory of its blocks back when sealed, and of the list when cleared', async () => {
    collectGarbage();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const before = arrayBuffers();
    const index = new RefIndex();
    // 1M references: 8 MiB of blocks, then an 8 MiB sorted list.
    for (let i = 0; i < 1_000_000; i++) index.add(`R-${i}`);
    expect(arrayBuffers() - before).toBeGreaterThan(7.5 * MiB);
    index.seal();
    // Without a full collection, the blocks would still be held beside the list.
    expect((await arrayBuffersBelow(before + 10 * MiB)) - before).toBeLessThan(10 * MiB);
    // Nor would the list be, when cleared.
    index.clear();
    expect((await arrayBuffersBelow(before + 2 * MiB)) - before).toBeLessThan(2 * MiB);
  });
});
