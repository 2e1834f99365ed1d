import * as XLSX from '@e965/xlsx';
import { describe, expect, it } from 'vitest';
import { intake, memorySource } from './helpers.js';

// A retry file's new_reference_id column (send/report.ts writes it empty, a person fills it):
// a row is sent under its new reference when there is one, else under its reference_id.

const ROWS = [
  ['reference_id', 'new_reference_id', 'amount', 'currency', 'recipient'],
  ['A-1', 'A-1-R1', '1.00', 'EUR', 'a@example.com'],
  ['B-2', '', '2.00', 'EUR', 'b@example.com'],
  ['C-3', ' C-3-R1 ', '3.00', 'EUR', 'c@example.com'],
];

describe('the new_reference_id column', () => {
  it('in a CSV: sends a filled row under it, counts it, and warns of no ignored column', async () => {
    const text = `${ROWS.map((r) => r.join(',')).join('\n')}\n`;
    const r = await intake(memorySource('retry.csv', text));
    expect(r.lines).toEqual([]);
    expect(r.warnings).toEqual([]);
    expect(r.payouts.map((p) => p.reference_id)).toEqual(['A-1-R1', 'B-2', 'C-3-R1']);
    expect(r.meta.renamed).toEqual({
      count: 2,
      examples: [
        ['A-1', 'A-1-R1'],
        ['C-3', 'C-3-R1'],
      ],
    });
  });

  it('in a workbook, as in a CSV', async () => {
    const book = XLSX.utils.book_new();
    XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet(ROWS), 'Retry');
    const bytes = XLSX.write(book, { type: 'buffer', bookType: 'xlsx' }) as Buffer;
    const r = await intake(memorySource('retry.xlsx', bytes, 1000));
    expect(r.lines).toEqual([]);
    expect(r.payouts.map((p) => p.reference_id)).toEqual(['A-1-R1', 'B-2', 'C-3-R1']);
    expect(r.meta.renamed?.count).toBe(2);
  });

  it('without the column, files read as before', async () => {
    const r = await intake(
      memorySource('plain.csv', 'reference_id,amount,currency,recipient\nA-1,1,EUR,a@x\n'),
    );
    expect(r.payouts.map((p) => p.reference_id)).toEqual(['A-1']);
    expect(r.meta.renamed).toBeUndefined();
  });
});
