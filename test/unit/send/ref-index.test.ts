import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../../src/core/send/collect.js';
import { RefIndex } from '../../../src/core/send/ref-index.js';

describe('RefIndex', () => {
  it('adds, finds and forgets references across growth', () => {
    const index = new RefIndex(4);
    for (let i = 0; i < 50_000; i++) expect(index.add(`REF-${i}`)).toBe(true);
    expect(index.size).toBe(50_000);
    expect(index.add('REF-123')).toBe(false);
    for (let i = 0; i < 50_000; i += 97) expect(index.has(`REF-${i}`)).toBe(true);
    let strays = 0;
    for (let i = 50_000; i < 100_000; i++) if (index.has(`REF-${i}`)) strays++;
    expect(strays).toBe(0);
    expect(index.has('')).toBe(false);
    expect(index.add('')).toBe(true);
    expect(index.has('')).toBe(true);
    index.clear();
    expect(index.has('REF-1')).toBe(false);
    expect(index.size).toBe(0);
  });

  it('distinguishes texts that differ only in order, case or normalisation', () => {
    const index = new RefIndex();
    for (const t of ['ab', 'ba', 'AB', 'a b', '', 'é', 'e\u0301']) expect(index.add(t)).toBe(true);
    expect(index.size).toBe(7);
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

  it('gives the memory of outgrown and dropped tables back at once', async () => {
    collectGarbage();
    const before = await arrayBuffersBelow(arrayBuffers() - MiB);
    const index = new RefIndex();
    // 600k references: the table ends at 2^21 slots (16 MiB) after outgrowing 8, 4, 2... MiB.
    for (let i = 0; i < 600_000; i++) index.add(`R-${i}`);
    expect(arrayBuffers() - before).toBeGreaterThan(15 * MiB);
    // Without a full collection, the 8 and 4 MiB tables it outgrew would still be held.
    expect((await arrayBuffersBelow(before + 20 * MiB)) - before).toBeLessThan(20 * MiB);
    index.clear();
    collectGarbage();
    expect((await arrayBuffersBelow(before + 2 * MiB)) - before).toBeLessThan(2 * MiB);
  });
});
