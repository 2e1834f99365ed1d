import { describe, expect, it } from 'vitest';
import {
  shortTime,
  terminalTable,
  tsvTable,
  visibleWidth,
  wrapText,
} from '../../../src/output/table.js';

const HEAD = ['reference_id', 'status', 'amount', 'charges', 'transaction_id', 'message'];
const rows = Array.from({ length: 3 }, (_, i) => [
  `PO-2026-11-${String(i + 1).padStart(4, '0')}`,
  i === 0 ? 'success (sent earlier)' : 'failed',
  '1250.00 EUR',
  '12.50',
  `sbx_txn_0123456789abcdef0123${i}`,
  i === 0 ? '' : 'Payout declined by the bank: the account is closed',
]);
const layout = { wrap: ['status', 'message'], below: ['message'], drop: ['charges'] };
const bold = (t: string) => t;

describe('terminalTable', () => {
  it.each([70, 100, 160])('fits %i columns with every identifier whole', (width) => {
    const text = terminalTable(HEAD, rows, { ...layout, width, bold });
    for (const line of text.split('\n')) expect(visibleWidth(line)).toBeLessThanOrEqual(width);
    for (const row of rows) {
      expect(text).toContain(row[0]);
      expect(text).toContain(row[4]);
    }
    expect(text).not.toMatch(/[│┌─]/);
  });

  it('moves the message under its row, then leaves out charges, saying so', () => {
    const wide = terminalTable(HEAD, rows, { ...layout, width: 160, bold });
    expect(wide.split('\n')[0]).toMatch(
      /^reference_id +status +amount +charges +transaction_id +message$/,
    );
    const at100 = terminalTable(HEAD, rows, { ...layout, width: 100, bold });
    expect(at100).toContain('\n  message: Payout declined by the bank: the account is closed');
    expect(at100).toContain('charges');
    const at70 = terminalTable(HEAD, rows, { ...layout, width: 70, bold });
    expect(at70.split('\n')[0]).not.toContain('charges');
    expect(at70).toContain('(not shown at this width: charges; see --json)');
  });

  it('never splits a URL or an identifier in a wrapping column', () => {
    const url = 'https://payouts.sandbox.example.com/merchant/api/v1';
    const head = ['run', 'service', 'states'];
    const body = [['r-0123456789ab', url, 'running: 3 confirmed, 2 in flight']];
    const text = terminalTable(head, body, { wrap: ['service', 'states'], width: 70, bold });
    expect(text).toContain(url);
    expect(text.split('\n').some((l) => l.includes(url))).toBe(true);
  });

  it('leaves out a column empty in every row', () => {
    const text = terminalTable(['a', 'b'], [['x', '']], { width: 80, bold });
    expect(text).toBe('a\nx');
  });
});

describe('wrapText', () => {
  it('breaks at spaces, and a word wider than the column where it ends', () => {
    expect(wrapText('success (sent earlier)', 10)).toEqual(['success', '(sent', 'earlier)']);
    expect(wrapText('abcdefghij', 4)).toEqual(['abcd', 'efgh', 'ij']);
    expect(wrapText('\u001b[32mok\u001b[39m', 4)).toEqual(['\u001b[32mok\u001b[39m']);
  });
});

describe('tsvTable and shortTime', () => {
  it('writes a header and tab-separated rows without colours', () => {
    expect(tsvTable(['a', 'b'], [['\u001b[31mx\u001b[39m', '']])).toBe('a\tb\nx\t');
  });
  it('gives a time to the minute in UTC', () => {
    expect(shortTime('2026-11-24T23:07:45.123Z')).toBe('2026-11-24 23:07');
    expect(shortTime('not a time')).toBe('not a time');
  });
});
