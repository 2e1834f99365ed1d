/** Ready-to-fill payout files, one per format, with the documented fields. */
import type { InputFormat } from './types.js';
import { xlsxTemplate } from './xlsx-template.js';

const EXAMPLE = {
  reference_id: 'payout-0001',
  amount: '12.50',
  currency: 'USD',
  recipient: 'jane.doe@example.com',
  description: 'Invoice 1001',
};

/** A template workbook: the documented columns and one example row, on the sheet "Payouts". */
export function templateWorkbook(): Buffer {
  return xlsxTemplate(EXAMPLE);
}

/** A template file in a text format: header and one example row, or the JSON equivalents. */
export function templateText(format: Exclude<InputFormat, 'xlsx'>): string {
  switch (format) {
    case 'csv': {
      const header = Object.keys(EXAMPLE).join(',');
      return `${header}\n${Object.values(EXAMPLE).join(',')}\n`;
    }
    case 'json':
      // Amounts are written as strings: a JSON number would be read exactly too, but a
      // string survives every tool that edits the file on the way.
      return `${JSON.stringify({ batch_reference: 'batch-0001', payouts: [EXAMPLE] }, null, 2)}\n`;
    case 'ndjson':
      return `${JSON.stringify(EXAMPLE)}\n`;
  }
}
