import { describe, expect, it } from 'vitest';
import { payoutAmountTexts } from '../../../src/sandbox/amount-text.js';

describe('payoutAmountTexts', () => {
  it('finds each payout amount text by index', () => {
    const body =
      '{"batch_reference":"b","payouts":[{"amount":10.50,"currency":"USD"},{"currency":"EUR","amount":1e2},{"amount":"3"},{"x":{"amount":7},"amount":-0.000}]}';
    expect([...payoutAmountTexts(body)]).toEqual([
      [0, '10.50'],
      [1, '1e2'],
      [3, '-0.000'],
    ]);
  });

  it('ignores amounts elsewhere and look-alikes inside strings', () => {
    const body =
      '{"amount":1.0,"note":"{\\"payouts\\":[{\\"amount\\":9}]}","payouts":[ { "description" : "amount: 5, \\"amount\\":6", "amount" : 100.001 } ] }';
    expect([...payoutAmountTexts(body)]).toEqual([[0, '100.001']]);
  });

  it('decodes escaped keys and lets the last duplicate key win', () => {
    const body = '{"payouts":[{"a":[1,2]}],"\\u0070ayouts":[{"amount":1,"\\u0061mount":2.50}]}';
    expect([...payoutAmountTexts(body)]).toEqual([[0, '2.50']]);
  });

  it('keeps digits a double would drop', () => {
    const body = '{"payouts":[{"amount":0.1000000000000000001}]}';
    expect(JSON.parse(body).payouts[0].amount).toBe(0.1);
    expect(payoutAmountTexts(body).get(0)).toBe('0.1000000000000000001');
  });
});
