import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { PayoutOutcome } from '../../../src/core/send/outcome.js';
import { OutcomeStore, parseResultLine } from '../../../src/core/send/outcome-store.js';
import { resultItemJson } from '../../../src/core/send/render.js';
import { rawListItem } from '../../../src/output/output.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A store in a fresh folder whose charges are cents of any currency. */
function store(capacity: number): OutcomeStore {
  const dir = mkdtempSync(join(tmpdir(), 'payouts-outcomes-'));
  dirs.push(dir);
  return OutcomeStore.create(dir, 1, capacity, (_cur, charges) =>
    Number.isInteger(charges * 100) ? BigInt(Math.round(charges * 100)) : undefined,
  );
}

describe('OutcomeStore', () => {
  it('reads back every field exactly, amounts as their text', () => {
    const samples: PayoutOutcome[] = [
      {
        reference_id: 'A',
        amount: '0.10',
        currency: 'USD',
        status: 'success',
        transaction_id: 'T1',
        charges: 0.5,
      },
      {
        reference_id: 'tab\there "q" \\ 日本',
        amount: '125.500',
        currency: 'BHD',
        status: 'failed',
        message: 'no, "amount": 1, x',
      },
      { reference_id: 'C', amount: '48000', currency: 'JPY', status: 'not_sent' },
      {
        reference_id: 'D',
        amount: '1',
        currency: 'EUR',
        status: 'pending',
        sent_earlier: true,
        charges: 1e-7,
      },
    ];
    for (const o of samples) expect(parseResultLine(resultItemJson(o))).toEqual(o);
    const s = store(2);
    for (const [i, o] of samples.entries()) s.set(i, o);
    expect([...s.values()]).toEqual(samples);
    expect([...s.resultListText()].join('')).toBe(
      samples.map((o) => rawListItem(resultItemJson(o))).join(''),
    );
    expect(s.get(1)).toEqual(samples[1]);
    s.remove();
  });

  it('keeps the latest outcome of a row, its sent-earlier mark, counts and charge totals', () => {
    const s = store(4);
    const base = { amount: '1.00', currency: 'EUR' };
    s.set(0, { ...base, reference_id: 'A', status: 'not_sent' });
    s.set(1, { ...base, reference_id: 'B', status: 'success', charges: 0.25, sent_earlier: true });
    s.set(2, { ...base, reference_id: 'C', status: 'not_sent' });
    s.set(0, { ...base, reference_id: 'A', status: 'success', charges: 0.5 });
    s.set(1, { ...base, reference_id: 'B', status: 'canceled' });
    expect(s.size).toBe(3);
    expect(s.has(3)).toBe(false);
    expect(s.get(1)).toEqual({
      ...base,
      reference_id: 'B',
      status: 'canceled',
      sent_earlier: true,
    });
    expect(s.countsOf()).toEqual({
      success: 1,
      pending: 0,
      failed: 2,
      unknown: 0,
      notSent: 1,
      sentEarlier: 1,
    });
    expect(s.chargeEntries()).toEqual([{ currency: 'EUR', minor: 50n }]);
    expect(s.statusKinds()).toEqual(['success', 'not_sent', 'failed']);
    expect([...s.withSuccess(false)].map((o) => o.reference_id)).toEqual(['B', 'C']);
    expect([...s.withSuccess(true)].map((o) => o.reference_id)).toEqual(['A']);
    s.set(0, { ...base, reference_id: 'A', status: 'failed' });
    expect(s.chargeEntries()).toEqual([]);
    s.remove();
  });

  it('holds many rows set out of order, across blocks and growth, reading back long lines', () => {
    const s = store(10);
    const n = 20_000;
    const outcome = (i: number): PayoutOutcome => ({
      reference_id: `R-${i}`,
      amount: `${i}.25`,
      currency: 'EUR',
      status: i % 7 === 0 ? 'failed' : 'success',
      transaction_id: `T-${i}`,
      ...(i % 1000 === 3 ? { message: 'x'.repeat(150_000 + i) } : {}),
    });
    // Chunks of 100 finish out of order, as with several requests at a time.
    for (let c = 0; c < n / 100; c += 2) {
      for (const chunk of [c + 1, c]) {
        for (let i = chunk * 100; i < chunk * 100 + 100; i++) s.set(i, outcome(i));
      }
    }
    let i = 0;
    for (const o of s.values()) expect(o).toEqual(outcome(i++));
    expect(i).toBe(n);
    expect(s.forRow(5, 'R-5')).toEqual(outcome(5));
    // An input that no longer matches its rows is looked up by reference.
    expect(s.forRow(5, 'R-9')).toEqual(outcome(9));
    expect(s.forRow(6, 'nope')).toBeUndefined();
    s.remove();
  });

  it('gives the --json list in input order, copying runs of rows, whatever order they came in', () => {
    const s = store(10);
    const n = 3000;
    const outcome = (i: number, status = 'success'): PayoutOutcome => ({
      reference_id: `R-${i} ✓`,
      amount: `${i}.25`,
      currency: 'EUR',
      status,
      transaction_id: `T-${i}`,
      ...(i % 700 === 5 ? { message: 'm'.repeat(90_000 + i) } : {}),
    });
    // Chunks of 100 out of order; some rows set again later (a read-back), a few never reached.
    const never = new Set([1500, 1501, 2999]);
    for (let c = 0; c < n / 100; c += 2) {
      for (const chunk of [c + 1, c]) {
        for (let i = chunk * 100; i < chunk * 100 + 100; i++)
          if (!never.has(i)) s.set(i, outcome(i));
      }
    }
    for (const i of [0, 57, 58, 60, 1502, 2998]) s.set(i, outcome(i, 'failed'));
    const text = [...s.resultListText()].join('');
    const expected = Array.from({ length: n }, (_, i) => i)
      .filter((i) => !never.has(i))
      .map((i) => outcome(i, [0, 57, 58, 60, 1502, 2998].includes(i) ? 'failed' : 'success'));
    expect(text).toBe(expected.map((o) => rawListItem(resultItemJson(o))).join(''));
    expect([...s.values()]).toEqual(expected);
    s.remove();
  });
});
