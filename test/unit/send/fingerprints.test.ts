import { describe, expect, it } from 'vitest';
import { FingerprintSet } from '../../../src/core/send/fingerprints.js';

describe('FingerprintSet', () => {
  it('tells new texts from ones already added, across growth', () => {
    const set = new FingerprintSet(4);
    for (let i = 0; i < 100_000; i++) expect(set.add(`REF-${i}`)).toBe(true);
    expect(set.size).toBe(100_000);
    for (let i = 0; i < 100_000; i += 997) expect(set.add(`REF-${i}`)).toBe(false);
    expect(set.add('REF-100000')).toBe(true);
    expect(set.size).toBe(100_001);
  });

  it('distinguishes texts that differ only in order or case', () => {
    const set = new FingerprintSet();
    for (const t of ['ab', 'ba', 'AB', 'a b', '', 'é', 'e\u0301']) expect(set.add(t)).toBe(true);
  });
});
