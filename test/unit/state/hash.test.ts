import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  canonicalDecimal,
  HASH_VERSION,
  payoutHash,
  runIdFor,
  sameHash,
  serviceId,
} from '../../../src/state/hash.js';

const base = { reference_id: 'PAY-1', amount: '10.5', currency: 'USD', recipient: 'a@example.com' };

describe('ids', () => {
  it('serviceId is the first 16 hex chars of sha256(serviceKey)', () => {
    const key = 'https://pay.example.com';
    const full = createHash('sha256').update(key).digest('hex');
    expect(serviceId(key)).toBe(full.slice(0, 16));
    expect(serviceId('sandbox')).not.toBe(serviceId(key));
  });

  it('runIdFor hashes the service key and the input hash, newline-separated', () => {
    const full = createHash('sha256').update('sandbox\nabc').digest('hex');
    expect(runIdFor('sandbox', 'abc')).toBe(full.slice(0, 16));
    expect(runIdFor('sandbox', 'abd')).not.toBe(runIdFor('sandbox', 'abc'));
    expect(runIdFor('other', 'abc')).not.toBe(runIdFor('sandbox', 'abc'));
  });

  it('payoutHash compares amounts by value', () => {
    const h = payoutHash(base);
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(payoutHash({ ...base, amount: '10.50' })).toBe(h);
    expect(payoutHash({ ...base, amount: '010.500' })).toBe(h);
    expect(payoutHash({ ...base, amount: '10.51' })).not.toBe(h);
    expect(payoutHash({ ...base, amount: '105' })).not.toBe(h);
    expect(payoutHash({ ...base, amount: '10' })).toBe(payoutHash({ ...base, amount: '10.00' }));
  });

  it('payoutHash differs on recipient, currency and reference', () => {
    const h = payoutHash(base);
    expect(payoutHash({ ...base, recipient: 'b@example.com' })).not.toBe(h);
    expect(payoutHash({ ...base, currency: 'EUR' })).not.toBe(h);
    expect(payoutHash({ ...base, reference_id: 'PAY-2' })).not.toBe(h);
  });

  it('payoutHash cannot be fooled by moving text between fields', () => {
    const a = payoutHash({ ...base, reference_id: 'A B', recipient: 'C' });
    const b = payoutHash({ ...base, reference_id: 'A', recipient: 'B C' });
    expect(a).not.toBe(b);
  });

  it('payoutHash is the SHA-256 of the canonical joined fields', () => {
    const amounts = ['10.5', '010.500', ' 7 ', '10.', '0', '000', '.5', '1e5', 'abc', '', '-4'];
    const refs = ['PAY-1', '', '日本-1', 'a|b', 'tab\there'];
    for (const reference_id of refs) {
      for (const amount of amounts) {
        for (const currency of ['USD', ' eur ']) {
          const p = { reference_id, amount, currency, recipient: 'r|é' };
          const joined = `${reference_id.length}:${reference_id}|${canonicalDecimal(amount)}|${currency.trim().toUpperCase()}|${p.recipient}`;
          expect(payoutHash(p)).toBe(createHash('sha256').update(joined).digest('hex'));
        }
      }
    }
  });

  it('compares a stored hash by its version: only version 2 matches', () => {
    expect(sameHash(payoutHash(base), HASH_VERSION, base)).toBe(true);
    expect(sameHash(payoutHash(base), HASH_VERSION, { ...base, amount: '10.50' })).toBe(true);
    expect(sameHash(payoutHash(base), HASH_VERSION, { ...base, amount: '11' })).toBe(false);
    expect(sameHash(payoutHash(base), 1, base)).toBe(false);
  });
});
