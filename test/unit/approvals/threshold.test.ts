import { describe, expect, it } from 'vitest';
import { ruleText, thresholdLines, thresholdMoney } from '../../../src/core/approvals/common.js';
import type { RuleRow } from '../../../src/state/pg/approval-rules.js';

describe('a rule threshold in words', () => {
  it('is written as every amount is: grouped, in the currency decimals', () => {
    expect(thresholdMoney({ currency: 'EUR', amount: '1000' })).toBe('EUR 1,000.00');
    expect(thresholdMoney({ currency: 'JPY', amount: '50000' })).toBe('JPY 50,000');
    // A currency the table does not know keeps the text as typed.
    expect(thresholdMoney({ currency: 'XQQ', amount: '7.5' })).toBe('XQQ 7.5');
  });

  it('reads so in approvals show and in the rule line', () => {
    const rule: RuleRow = {
      active: true,
      above: [
        { currency: 'EUR', amount: '1000' },
        { currency: 'USD', amount: 'none' },
      ],
      expires_days: 7,
      approvers: 2,
      set_by: 'admin',
      os_user: null,
      host: null,
      at: '2026-11-28T10:00:00.000Z',
    } as RuleRow;
    expect(thresholdLines(rule)).toContain('  above EUR 1,000.00: 2 approvers');
    expect(ruleText(rule)).toContain('above EUR 1,000.00 needs 2 other people');
  });
});
