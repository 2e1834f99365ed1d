import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { serializeCreateRequest } from '../../../src/api/body.js';
import type { PayoutRequest } from '../../../src/api/types.js';
import {
  PayoutSpool,
  SPOOL_MEMORY_LIMIT,
  spoolMemoryBudget,
} from '../../../src/core/send/spool.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('PayoutSpool', () => {
  it('gives back every payout in order, serialised exactly as it would be sent', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payouts-spool-'));
    dirs.push(dir);
    const payouts: PayoutRequest[] = [
      { reference_id: 'tab\there', amount: '0.10', currency: 'USD', recipient: 'a@example.com' },
      // JSON escapes these with a backslash; the other references are read back without JSON.parse.
      { reference_id: 'back\\slash', amount: '1', currency: 'EUR', recipient: 'b' },
      { reference_id: 'lone \ud800 surrogate', amount: '2', currency: 'EUR', recipient: 'c' },
      {
        reference_id: 'line\nbreak "quoted"',
        amount: '125.500',
        currency: 'BHD',
        recipient: '+97333123456',
        description: 'Größe\t✓',
      },
      {
        reference_id: '日本-1',
        amount: '48000',
        currency: 'JPY',
        recipient: 'ID-7',
        description: '',
      },
    ];
    for (let i = 0; i < 5000; i++) {
      payouts.push({
        reference_id: `R-${i}`,
        amount: `${i}.25`,
        currency: 'EUR',
        recipient: `r${i}@example.com`,
      });
    }
    const spool = PayoutSpool.create(dir, 1);
    for (const [i, p] of payouts.entries()) spool.add(p, `hash${String(i).padStart(12, '0')}`);
    spool.finish();
    const back: Array<{ payout: PayoutRequest; hash: string }> = [];
    await spool.read((p) => {
      back.push(p);
    });
    expect(back).toHaveLength(payouts.length);
    expect(back.map((b) => b.payout.reference_id)).toEqual(payouts.map((p) => p.reference_id));
    expect(back.map((b) => b.payout.amount)).toEqual(payouts.map((p) => p.amount));
    expect(back[4999]!.hash).toBe('hash000000004999');
    expect(back[1]!.payout.reference_id).toBe('back\\slash');
    expect(back[2]!.payout.reference_id).toBe('lone \ud800 surrogate');
    // The request body built from the spool is byte for byte the one built from the rows.
    expect(serializeCreateRequest({ payouts: back.map((b) => b.payout) })).toBe(
      serializeCreateRequest({ payouts }),
    );
    spool.remove();
  });

  it('waits for the consumer before reading on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payouts-spool-'));
    dirs.push(dir);
    const spool = PayoutSpool.create(dir, 2);
    for (let i = 0; i < 3; i++)
      spool.add(
        { reference_id: `W-${i}`, amount: '1', currency: 'EUR', recipient: 'x' },
        'h'.repeat(16),
      );
    spool.finish();
    const seen: string[] = [];
    await spool.read(async ({ payout }) => {
      await new Promise((r) => setTimeout(r, 5));
      seen.push(payout.reference_id);
    });
    expect(seen).toEqual(['W-0', 'W-1', 'W-2']);
    spool.remove();
  });

  it('reads back lines longer than its buffer and characters split across reads', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payouts-spool-'));
    dirs.push(dir);
    const payouts: PayoutRequest[] = [];
    for (let i = 0; i < 4000; i++) {
      payouts.push({
        reference_id: `U-${i}-${'é'.repeat(i % 7)}`,
        amount: `${i}.5`,
        currency: 'EUR',
        recipient: `r${i}@example.com`,
        // Three-byte and four-byte characters at every offset, and now and then a line far
        // longer than one read.
        description: i % 1000 === 999 ? '✓'.repeat(400_000) : `${'✓'.repeat(i % 5)}😀`,
      });
    }
    const spool = PayoutSpool.create(dir, 3);
    for (const p of payouts) spool.add(p, 'h'.repeat(16));
    spool.finish();
    const back: PayoutRequest[] = [];
    await spool.read(({ payout }) => {
      back.push(payout);
    });
    expect(back.map((b) => b.reference_id)).toEqual(payouts.map((p) => p.reference_id));
    expect(serializeCreateRequest({ payouts: back })).toBe(serializeCreateRequest({ payouts }));
    spool.remove();
  });

  it('refuses a payout added after it was finished', () => {
    const dir = mkdtempSync(join(tmpdir(), 'payouts-spool-'));
    dirs.push(dir);
    const spool = PayoutSpool.create(dir, 4);
    spool.finish();
    expect(() =>
      spool.add({ reference_id: 'L', amount: '1', currency: 'EUR', recipient: 'x' }, 'h'),
    ).toThrow(/already finished/);
    spool.remove();
  });

  it.each([
    ['in memory', SPOOL_MEMORY_LIMIT, false],
    ['in memory until the limit, then in a file', 100_000, true],
  ])('keeps payouts %s and gives them back in order, exactly', async (_, limit, onDisk) => {
    const dir = mkdtempSync(join(tmpdir(), 'payouts-spool-'));
    dirs.push(dir);
    const payouts: PayoutRequest[] = [];
    for (let i = 0; i < 5000; i++) {
      payouts.push({
        reference_id: i % 100 === 7 ? `M-${i}\t"q"\\` : `M-${i}`,
        amount: `${i}.75`,
        currency: i % 2 ? 'EUR' : 'JPY',
        recipient: `m${i}@example.com`,
        description: i % 3 ? `Größe ${i} ✓😀` : '',
      });
    }
    const spool = PayoutSpool.create(dir, 5, limit);
    for (const [i, p] of payouts.entries()) spool.add(p, `h${String(i).padStart(15, '0')}`);
    spool.finish();
    expect(spool.onDisk).toBe(onDisk);
    expect(readdirSync(dir)).toHaveLength(onDisk ? 1 : 0);
    // Read twice, as a resumed run does (prior-state check, then sending).
    for (let pass = 0; pass < 2; pass++) {
      const back: Array<{ payout: PayoutRequest; hash: string }> = [];
      await spool.read((p) => {
        back.push(p);
      });
      expect(back.map((b) => b.payout.reference_id)).toEqual(payouts.map((p) => p.reference_id));
      expect(back[4321]!.hash).toBe('h000000000004321');
      expect(serializeCreateRequest({ payouts: back.map((b) => b.payout) })).toBe(
        serializeCreateRequest({ payouts }),
      );
    }
    spool.remove();
    expect(readdirSync(dir)).toHaveLength(0);
  });

  it('is kept in memory only for small inputs', () => {
    expect(spoolMemoryBudget(0)).toBe(SPOOL_MEMORY_LIMIT);
    expect(spoolMemoryBudget(8 << 20)).toBe(SPOOL_MEMORY_LIMIT);
    expect(spoolMemoryBudget((8 << 20) + 1)).toBe(0);
  });
});
