import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { fitTable, visibleWidth } from '../../../src/output/fit.js';
import { Output } from '../../../src/output/output.js';

const HEAD = ['reference_id', 'status', 'amount', 'charges', 'transaction_id', 'message'];
const rows = Array.from({ length: 12 }, (_, i) => [
  `PO-2026-11-${String(i + 1).padStart(4, '0')}`,
  'success',
  '1250.00 EUR',
  '',
  `txn_0123456789abcdef0123456789abcdef${i}`,
  'Payout accepted by the bank for processing on the next business day',
]);

/** An Output whose stdout is a terminal `columns` wide (or a pipe, without). */
function outputOn(columns?: number) {
  const stdout = Object.assign(new PassThrough(), { isTTY: columns !== undefined, columns });
  const stderr = new PassThrough();
  return new Output({
    stdout,
    stderr,
    stdin: new PassThrough(),
    json: false,
    debug: false,
    noColor: true,
  });
}

describe('fitTable', () => {
  it('leaves out a column empty in every row', () => {
    const fitted = fitTable(HEAD, rows, { width: 500, shrink: [] });
    expect(fitted.head).not.toContain('charges');
    expect(fitted.rows[0]).toHaveLength(5);
  });

  it('shortens the widest shrinkable cells with … until the table fits', () => {
    const fitted = fitTable(HEAD, rows, { width: 70, shrink: ['transaction_id', 'message'] });
    const widths = fitted.head.map((h, i) =>
      Math.max(visibleWidth(h), ...fitted.rows.map((r) => visibleWidth(r[i]!))),
    );
    expect(widths.reduce((a, w) => a + w + 3, 1)).toBeLessThanOrEqual(70);
    expect(fitted.rows[0]![0]).toBe('PO-2026-11-0001');
    expect(fitted.rows[0]![3]).toMatch(/…$/);
  });
});

describe('Output.table on a 70-column terminal', () => {
  it('keeps every row on one line within the width; a pipe keeps the full values', async () => {
    const shrink = { shrink: ['transaction_id', 'message'] };
    const onTerminal = await outputOn(70).table(HEAD, rows, shrink);
    const lines = onTerminal.split('\n');
    expect(lines).toHaveLength(rows.length + 3);
    for (const line of lines) expect(visibleWidth(line)).toBeLessThanOrEqual(70);
    const onPipe = await outputOn().table(HEAD, rows, shrink);
    expect(onPipe).toContain('Payout accepted by the bank for processing on the next business day');
  });
});
