import * as XLSX from '@e965/xlsx';
import { describe, expect, it } from 'vitest';
import { templateWorkbook } from '../../../src/input/index.js';
import { zipArchive } from '../../../src/input/xlsx-template.js';
import { plainNumberText } from '../../../src/money/amount.js';
import { type Intake, intake, memorySource } from './helpers.js';

// Workbooks are built here with the library's writer, cell by cell, so each test states the
// stored type of every cell: a string is a text cell, a number a numeric cell.
type Cell = string | number | XLSX.CellObject | undefined;

const HEADER = ['reference_id', 'amount', 'currency', 'recipient'];

/** A workbook of sheets, each given as rows of cells (row 1 first). */
function workbook(sheets: Record<string, Cell[][]>): Buffer {
  const book = XLSX.utils.book_new();
  for (const [name, rows] of Object.entries(sheets)) {
    const sheet: XLSX.WorkSheet = {};
    let width = 1;
    rows.forEach((row, r) => {
      width = Math.max(width, row.length);
      row.forEach((cell, c) => {
        if (cell === undefined) return;
        const address = XLSX.utils.encode_cell({ r, c });
        sheet[address] =
          typeof cell === 'string'
            ? { t: 's', v: cell }
            : typeof cell === 'number'
              ? { t: 'n', v: cell }
              : cell;
      });
    });
    sheet['!ref'] = XLSX.utils.encode_range({ s: { r: 0, c: 0 }, e: { r: rows.length, c: width } });
    XLSX.utils.book_append_sheet(book, sheet, name);
  }
  return XLSX.write(book, { type: 'buffer', bookType: 'xlsx' }) as Buffer;
}

function readBook(
  bytes: Buffer,
  opts: Parameters<typeof intake>[1] = {},
  name = 'run.xlsx',
): Promise<Intake> {
  return intake(memorySource(name, bytes, 1000), opts);
}

/** A workbook with one sheet "Payouts": the header, then one row per amount cell. */
function amounts(...cells: Cell[]): Buffer {
  return workbook({
    Payouts: [HEADER, ...cells.map((amount, i) => [`p-${i + 1}`, amount, 'EUR', 'a@example.com'])],
  });
}

describe('.xlsx amounts', () => {
  it('reads a text cell as its text and a number as the shortest decimal of its double', async () => {
    const r = await readBook(amounts('0.10', 0.1, 1234.5, 0.1 + 0.2, 48000));
    expect(r.lines).toEqual([
      'run.xlsx sheet Payouts row 5: amount "0.30000000000000004": cell B5 holds 0.30000000000000004, which Excel shows as 0.3: the stored number of a calculation carries binary rounding; round it in the sheet (=ROUND(…,2), in a German Excel =RUNDEN(…;2)) or type the amount as text',
    ]);
    expect(r.payouts.map((p) => [p.location, p.amount.text, p.amount.minor])).toEqual([
      ['sheet Payouts row 2', '0.10', 10n],
      ['sheet Payouts row 3', '0.1', 10n],
      ['sheet Payouts row 4', '1234.5', 123450n],
      ['sheet Payouts row 6', '48000', 4800000n],
    ]);
  });

  it('names a formula whose saved value carries binary rounding, and keeps exact ones', async () => {
    const r = await readBook(
      amounts({ t: 'n', v: 1.1 * 3, f: 'A2*3' }, { t: 'n', v: 3.3, f: 'ROUND(A3*3,2)' }),
    );
    expect(r.lines).toEqual([
      'run.xlsx sheet Payouts row 2: amount "3.3000000000000003": cell B2 holds 3.3000000000000003, which Excel shows as 3.3: the stored number of =A2*3 carries binary rounding; round it in the sheet (=ROUND(…,2), in a German Excel =RUNDEN(…;2)) or type the amount as text',
    ]);
    expect(r.payouts.map((p) => p.amount.text)).toEqual(['3.3']);
  });

  it('writes exponents out and refuses more decimals than the currency has', async () => {
    const r = await readBook(amounts(1e-7, 12.345, '12.345', 1e21));
    expect(r.lines).toEqual([
      'run.xlsx sheet Payouts row 2: amount "0.0000001": this currency allows at most 2 decimals: round the amount to 2 decimals',
      'run.xlsx sheet Payouts row 3: amount "12.345": this currency allows at most 2 decimals: round the amount to 2 decimals',
      'run.xlsx sheet Payouts row 4: amount "12.345": this currency allows at most 2 decimals: round the amount to 2 decimals',
      'run.xlsx sheet Payouts row 5: amount "1000000000000000000000": has more significant digits than a JSON number carries exactly (15 always fit): check the value',
    ]);
    expect(plainNumberText(1.5e-9)).toBe('0.0000000015');
    expect(plainNumberText(-2.5e22)).toBe('-25000000000000000000000');
  });

  it('uses a formula’s saved value, and refuses an error or a formula never calculated', async () => {
    const r = await readBook(
      amounts(
        { t: 'n', v: 25.5, f: 'B3*2' },
        { t: 's', v: '7.25', f: 'TEXT(B2,"0.00")' },
        { t: 'z', f: 'B2*3' } as XLSX.CellObject,
        { t: 'e', v: 0x07 },
        { t: 'e', v: 0x2a, f: 'VLOOKUP(A6,Rates!A:B,2,FALSE)' },
        { t: 'b', v: true },
      ),
    );
    expect(r.payouts.map((p) => p.amount.text)).toEqual(['25.5', '7.25']);
    expect(r.lines).toEqual([
      'run.xlsx sheet Payouts row 4: amount: cell B4 holds the formula =B2*3 with no saved value: open the workbook in Excel, let it calculate and save it again',
      'run.xlsx sheet Payouts row 5: amount: cell B5 holds the error #DIV/0!: correct the cell in Excel',
      'run.xlsx sheet Payouts row 6: amount: cell B6 holds the error #N/A (from =VLOOKUP(A6,Rates!A:B,2,FALSE)): correct the cell in Excel',
      'run.xlsx sheet Payouts row 7: amount: cell B7 holds TRUE, not text: format the column as Text in Excel and type the value again',
    ]);
  });

  it('refuses a date as an amount or a reference, naming what Excel shows', async () => {
    const date = { t: 'n', v: 45293, z: 'yyyy-mm-dd' } as XLSX.CellObject;
    const r = await readBook(
      workbook({
        Payouts: [
          HEADER,
          ['p-1', date, 'EUR', 'a@example.com'],
          [date, '5', 'EUR', 'b@example.com'],
        ],
      }),
    );
    expect(r.payouts).toEqual([]);
    expect(r.lines).toEqual([
      'run.xlsx sheet Payouts row 2: amount "2024-01-02": cell B2 holds a date, not an amount: format the column as Text in Excel and type the value again',
      'run.xlsx sheet Payouts row 3: reference_id "2024-01-02": cell A3 holds a date, not a reference: format the column as Text in Excel and type the value again',
    ]);
  });
});

describe('.xlsx references', () => {
  it('reads a numeric reference as its digits with a warning, and refuses one of 16 digits', async () => {
    const r = await readBook(
      workbook({
        Payouts: [
          HEADER,
          [123, '1.00', 'EUR', 'a@example.com'],
          [4567, '1.00', 'EUR', 'b@example.com'],
          [1234567890123456, '1.00', 'EUR', 'c@example.com'],
          [12.5, '1.00', 'EUR', 'd@example.com'],
        ],
      }),
    );
    expect(r.payouts.map((p) => p.reference_id)).toEqual(['123', '4567']);
    expect(r.lines).toEqual([
      'run.xlsx sheet Payouts row 4: reference_id "1234567890123456": cell A4 holds a number of 16 or more digits; Excel keeps 15 significant digits of a number, so digits may already be lost: format the column as Text in Excel and type the value again',
      'run.xlsx sheet Payouts row 5: reference_id "12.5": cell A5 holds a number, not a reference: format the column as Text in Excel and type the value again',
    ]);
    expect(r.warnings).toEqual([
      'run.xlsx sheet Payouts row 2: reference_id is a number in 2 rows, read as its digits; Excel drops leading zeros from numbers (000123 becomes 123): if yours have them, format the column as Text in Excel and type the value again',
    ]);
  });
});

describe('.xlsx sheets, headers and locations', () => {
  const twoSheets = () =>
    workbook({
      Notes: [['read me first']],
      'May run': [
        ['Ref', 'Betrag', 'currency', 'recipient', 'Kommentar'],
        ['m-1', '10.00', 'EUR', 'a@example.com', 'x'],
        [],
        ['m-2', 'zehn', 'EUR', 'b@example.com', 'y'],
      ],
    });

  it('reads the first sheet unless --sheet names another, with --map', async () => {
    const first = await readBook(twoSheets());
    expect(first.lines[0]).toMatch(
      /^run\.xlsx sheet Notes row 1: columns reference_id, amount, currency and recipient are missing; the header has "read me first": add "reference_id"/,
    );
    const r = await readBook(twoSheets(), {
      sheet: 'may RUN',
      map: { reference_id: 'Ref', amount: 'Betrag' },
    });
    expect(r.payouts.map((p) => [p.location, p.reference_id])).toEqual([
      ['sheet "May run" row 2', 'm-1'],
    ]);
    // Blank row 3 is skipped, and row 4 is named as Excel numbers it.
    expect(r.lines).toEqual([
      'run.xlsx sheet "May run" row 4: amount "zehn": use a plain decimal such as 1234.56',
    ]);
    expect(r.warnings).toEqual([
      'run.xlsx: ignoring column "Kommentar": only reference_id, amount, currency, recipient, description are read',
    ]);
    expect(r.meta.rows).toBe(2);
  });

  it('names the sheets when --sheet names none of them', async () => {
    const r = await readBook(twoSheets(), { sheet: 'June' });
    expect(r.lines).toEqual([
      'run.xlsx: has no sheet "June"; its sheets are "Notes", "May run": pass one of them to --sheet',
    ]);
  });

  it('refuses a file that is not a workbook, and a sheet with no payouts', async () => {
    const csv = await readBook(Buffer.from(`${HEADER.join(',')}\np,1,EUR,a\n`));
    expect(csv.lines).toEqual([
      'run.xlsx: is not an .xlsx workbook (an .xlsx file is a zip archive): open it in Excel and save it as "Excel Workbook (.xlsx)", or pass its real format with --format',
    ]);
    const encrypted = await readBook(Buffer.from('d0cf11e0a1b11ae1000000', 'hex'));
    expect(encrypted.lines).toEqual([
      'run.xlsx: is a workbook with a password to open, or an old .xls: open it in Excel, remove the password and save it as "Excel Workbook (.xlsx)"',
    ]);
    const zip = await readBook(zipArchive([{ name: 'notes.txt', data: Buffer.from('hello') }]));
    expect(zip.lines).toHaveLength(1);
    expect(zip.lines[0]).toMatch(
      /^run\.xlsx: cannot be read as an \.xlsx workbook \(.+\): open it in Excel and save it again as "Excel Workbook \(\.xlsx\)"$/,
    );
    const empty = await readBook(workbook({ Payouts: [HEADER] }));
    expect(empty.lines).toEqual(['run.xlsx sheet Payouts: no payouts in this sheet']);
  });

  it('refuses --sheet for a CSV file', async () => {
    await expect(
      intake(memorySource('run.csv', `${HEADER.join(',')}\n`), { includeHidden: true }),
    ).rejects.toThrow('run.csv: --include-hidden applies to .xlsx workbooks only');
    await expect(
      intake(memorySource('run.csv', `${HEADER.join(',')}\n`), { sheet: 'Payouts' }),
    ).rejects.toThrow('run.csv: --sheet applies to .xlsx workbooks only');
  });
});

/**
 * A workbook as a spreadsheet leaves it: the first sheet hidden (or very hidden) with old
 * payouts, then "Payouts" whose rows `hiddenRows` (1-based) are hidden.
 */
function hiddenBook(hiddenRows: number[], firstHidden: 1 | 2 = 1): Buffer {
  const book = XLSX.utils.book_new();
  const old = XLSX.utils.aoa_to_sheet([HEADER, ['old-1', '99.00', 'EUR', 'old@example.com']]);
  const rows = [
    HEADER,
    ...[1, 2, 3, 4].map((n) => [`p-${n}`, `${n}.00`, 'EUR', `p${n}@example.com`]),
  ];
  const payouts = XLSX.utils.aoa_to_sheet(rows);
  payouts['!rows'] = rows.map((_, i) => (hiddenRows.includes(i + 1) ? { hidden: true } : {}));
  XLSX.utils.book_append_sheet(book, old, 'Old');
  XLSX.utils.book_append_sheet(book, payouts, 'Payouts');
  book.Workbook = { Sheets: [{ Hidden: firstHidden }, { Hidden: 0 }] };
  return XLSX.write(book, { type: 'buffer', bookType: 'xlsx' }) as Buffer;
}

describe('.xlsx hidden sheets and rows', () => {
  it.each([1, 2] as const)(
    'reads the first visible sheet when the first is hidden (%i), and names it',
    async (hidden) => {
      const r = await readBook(hiddenBook([], hidden));
      expect(r.lines).toEqual([]);
      expect(r.payouts.map((p) => p.reference_id)).toEqual(['p-1', 'p-2', 'p-3', 'p-4']);
      expect(r.meta.sheet).toBe('Payouts');
      // Named with --sheet, a hidden sheet is read: the user chose it.
      const old = await readBook(hiddenBook([], hidden), { sheet: 'Old' });
      expect(old.payouts.map((p) => p.reference_id)).toEqual(['old-1']);
    },
  );

  it('refuses hidden rows, naming them, unless --include-hidden', async () => {
    const r = await readBook(hiddenBook([3, 5]));
    expect(r.lines).toEqual([
      'run.xlsx sheet Payouts: rows 3 and 5 are hidden in Excel, so whoever checked the sheet may not have seen them: unhide them and check, or delete them; to pay hidden rows as they are, pass --include-hidden',
    ]);
    const all = await readBook(hiddenBook([3, 5]), { includeHidden: true });
    expect(all.lines).toEqual([]);
    expect(all.payouts.map((p) => p.reference_id)).toEqual(['p-1', 'p-2', 'p-3', 'p-4']);
  });

  it('says which sheets have a payout header when the first visible one has none', async () => {
    const r = await readBook(
      workbook({ Notes: [['read me first']], Summary: [['total', 10]], 'May run': [HEADER] }),
    );
    expect(r.lines).toEqual([
      'run.xlsx sheet Notes: the first visible sheet has no payout header (reference_id, amount, currency, recipient); the sheet "May run" has one: pass --sheet "May run"',
    ]);
  });
});

describe('payouts template --format xlsx', () => {
  it('reads back through the reader as its example row', async () => {
    const r = await readBook(templateWorkbook(), {}, 'template.xlsx');
    expect(r.lines).toEqual([]);
    expect(r.warnings).toEqual([]);
    expect(r.payouts).toHaveLength(1);
    const p = r.payouts[0]!;
    expect([p.location, p.reference_id, p.amount.text, p.currency, p.recipient]).toEqual([
      'sheet Payouts row 2',
      'payout-0001',
      '12.50',
      'USD',
      'jane.doe@example.com',
    ]);
  });

  it('formats reference_id, amount and recipient as Text', () => {
    const book = XLSX.read(templateWorkbook(), { type: 'buffer', cellNF: true });
    const sheet = book.Sheets.Payouts!;
    const formats = ['A2', 'B2', 'C2', 'D2', 'E2'].map((a) => sheet[a]?.z);
    expect(formats).toEqual(['@', '@', 'General', '@', 'General']);
  });
});
