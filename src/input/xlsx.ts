/**
 * Reader of .xlsx workbooks: one sheet, each cell taken by its stored type (text, number,
 * formula with its saved value, error), then the same header matching and checks as CSV.
 */
import type { CellObject } from '@e965/xlsx';
import { errorMessage } from '../errors.js';
import { plainNumberText } from '../money/amount.js';
import type { PayoutChecker } from './fields.js';
import { type HeaderColumns, matchHeader } from './header.js';
import { readErrorMessage } from './source.js';
import type { FileMeta, InputSource, IntakeSink, PayoutField } from './types.js';

/** What the .xlsx reader needs besides the source. */
export interface XlsxSettings {
  file: string;
  /** --sheet; else the first sheet. */
  sheet: string | undefined;
  /** Normalized column name -> field. */
  names: Map<string, PayoutField>;
  map: Partial<Record<PayoutField, string>>;
  checker: PayoutChecker;
  sink: IntakeSink;
}

/** A workbook is read whole (a zip cannot be read from its start alone): this bounds memory. */
const MAX_WORKBOOK_BYTES = 128 * 1024 * 1024;
/** Rows checked between two asks of the sink's backpressure. */
const ROWS_PER_READY = 256;
/** Numbers from 10^15 up may have lost digits: Excel keeps 15 significant digits. */
const EXACT_INTEGER_LIMIT = 1e15;
const AS_TEXT = 'format the column as Text in Excel and type the value again';

/** Excel's error values by the code the library stores for them. */
const ERROR_VALUES: Readonly<Record<number, string>> = {
  0: '#NULL!',
  7: '#DIV/0!',
  15: '#VALUE!',
  23: '#REF!',
  29: '#NAME?',
  36: '#NUM!',
  42: '#N/A',
  43: '#GETTING_DATA',
};

type Library = typeof import('@e965/xlsx');

/** Reads a source's bytes whole; undefined (reported) when it cannot be read or is too big. */
async function readWorkbookBytes(
  source: InputSource,
  fail: (message: string) => void,
): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of source.open()) {
      const b = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : (chunk as Buffer);
      size += b.length;
      if (size > MAX_WORKBOOK_BYTES) {
        fail(
          `is larger than ${MAX_WORKBOOK_BYTES / 1024 / 1024} MiB, more than a workbook is read whole: save the sheet as "CSV UTF-8" and pass that file`,
        );
        return undefined;
      }
      chunks.push(b);
    }
  } catch (err) {
    fail(readErrorMessage(err));
    return undefined;
  }
  return Buffer.concat(chunks, size);
}

/** How a sheet is named in locations: quoted when its name holds spaces or quotes. */
function sheetLabel(name: string): string {
  return /^[^\s"]+$/.test(name) ? `sheet ${name}` : `sheet ${JSON.stringify(name)}`;
}

/** The sheet to read: --sheet (exactly, else ignoring case), or the first; undefined if none. */
function pickSheet(names: string[], wanted: string | undefined): string | undefined {
  if (wanted === undefined) return names[0];
  const folded = wanted.toLowerCase();
  return names.find((n) => n === wanted) ?? names.find((n) => n.toLowerCase() === folded);
}

/** Parses the workbook (only the sheet wanted); undefined when it is not one (reported). */
function openSheet(
  lib: Library,
  bytes: Buffer,
  s: XlsxSettings,
): { name: string; rows: CellObject[][] } | undefined {
  const fail = (message: string) => s.checker.report(undefined, undefined, undefined, message);
  // An .xlsx file is a zip; anything else (an old .xls renamed, a CSV) is refused unread.
  // Excel saves a workbook with a password to open as an OLE compound file, as it saves .xls.
  if (bytes.length >= 4 && bytes.readUInt32LE(0) === 0xe011cfd0) {
    fail(
      'is a workbook with a password to open, or an old .xls: open it in Excel, remove the password and save it as "Excel Workbook (.xlsx)"',
    );
    return undefined;
  }
  if (bytes.length < 4 || bytes.readUInt32LE(0) !== 0x04034b50) {
    fail(
      'is not an .xlsx workbook (an .xlsx file is a zip archive): open it in Excel and save it as "Excel Workbook (.xlsx)", or pass its real format with --format',
    );
    return undefined;
  }
  try {
    const names = lib.read(bytes, { type: 'buffer', bookSheets: true }).SheetNames;
    const sheet = pickSheet(names, s.sheet);
    if (sheet === undefined) {
      fail(
        s.sheet === undefined
          ? 'has no sheets: check that it is the right file'
          : `has no sheet "${s.sheet}"; its sheets are ${names.map((n) => JSON.stringify(n)).join(', ')}: pass one of them to --sheet`,
      );
      return undefined;
    }
    const book = lib.read(bytes, {
      type: 'buffer',
      sheets: sheet,
      dense: true,
      // Formulas and empty stubs are kept so that a formula with no saved value is seen.
      cellFormula: true,
      sheetStubs: true,
      cellNF: true,
      cellText: false,
      cellHTML: false,
      cellDates: false,
    });
    const rows = (book.Sheets[sheet] as { '!data'?: CellObject[][] } | undefined)?.['!data'];
    return { name: sheet, rows: rows ?? [] };
  } catch (err) {
    fail(
      `cannot be read as an .xlsx workbook (${errorMessage(err)}): open it in Excel and save it again as "Excel Workbook (.xlsx)"`,
    );
    return undefined;
  }
}

/** Whether a cell holds nothing: absent, an empty stub, or blank text. */
function isBlankCell(cell: CellObject | undefined): boolean {
  if (cell === undefined || cell === null) return true;
  if (cell.t === 'z') return cell.f === undefined;
  return cell.t === 's' && String(cell.v).trim() === '';
}

/** The text of a header cell. */
function headerText(cell: CellObject | undefined): string {
  if (cell === undefined || cell === null) return '';
  if (cell.t === 's') return String(cell.v);
  if (cell.t === 'n') return plainNumberText(cell.v as number) ?? '';
  return '';
}

/** Reads the cells of one sheet as payout rows. */
class SheetRows {
  private readonly label: string;
  private columns: HeaderColumns | undefined;
  /** Rows holding a number as reference_id or recipient: the first row, and how many. */
  private numericIds: { row: number; count: number; fields: Set<PayoutField> } | undefined;
  rows = 0;

  constructor(
    private readonly lib: Library,
    private readonly s: XlsxSettings,
    sheet: string,
  ) {
    this.label = sheetLabel(sheet);
  }

  /** Where a row is, as problems show it. */
  at(row: number): string {
    return `${this.label} row ${row}`;
  }

  /** Reads the header row; false when no row can be read (already reported). */
  header(cells: CellObject[], row: number): boolean {
    const texts = cells.map((c) => headerText(c));
    // Formatted but empty cells right of the table are not columns.
    while (texts.length > 0 && texts[texts.length - 1]!.trim() === '') texts.pop();
    this.columns = matchHeader(texts, this.at(row), this.s);
    return this.columns !== undefined;
  }

  /** Checks one data row. */
  row(cells: CellObject[], row: number): void {
    const c = this.columns!;
    this.rows++;
    const read = (i: number, field: PayoutField) => this.cell(cells[i], i, row, field);
    this.s.checker.check(
      this.at(row),
      read(c.reference, 'reference_id'),
      read(c.amount, 'amount'),
      read(c.currency, 'currency'),
      read(c.recipient, 'recipient'),
      c.description === -1 ? undefined : read(c.description, 'description'),
    );
  }

  /** The warning for references or recipients stored as numbers, if any. */
  finish(): void {
    const n = this.numericIds;
    if (n === undefined) return;
    const fields = [...n.fields].join(' and ');
    this.s.sink.warning(
      `${this.s.file} ${this.at(n.row)}: ${fields} ${n.count === 1 ? 'is a number' : `is a number in ${n.count} rows`}, read as its digits; Excel drops leading zeros from numbers (000123 becomes 123): if yours have them, ${AS_TEXT}`,
    );
  }

  /** A cell's text for a field, or null when the cell cannot be used (reported here). */
  private cell(
    cell: CellObject | undefined,
    col: number,
    row: number,
    field: PayoutField,
  ): string | null {
    if (cell === undefined || cell === null) return '';
    const where = `cell ${this.lib.utils.encode_col(col)}${row}`;
    const refuse = (value: string | undefined, message: string): null => {
      this.s.checker.report(this.at(row), field, value, `${where} ${message}`);
      return null;
    };
    switch (cell.t) {
      case 's':
        return String(cell.v);
      case 'z':
        if (cell.f === undefined) return '';
        return refuse(
          undefined,
          `holds the formula =${cell.f} with no saved value: open the workbook in Excel, let it calculate and save it again`,
        );
      case 'e': {
        const error = ERROR_VALUES[cell.v as number] ?? `error ${String(cell.v)}`;
        return refuse(
          undefined,
          `holds the error ${error}${cell.f === undefined ? '' : ` (from =${cell.f})`}: correct the cell in Excel`,
        );
      }
      case 'b':
        return refuse(undefined, `holds ${cell.v ? 'TRUE' : 'FALSE'}, not text: ${AS_TEXT}`);
      case 'n':
        return this.number(cell, row, field, refuse);
      default:
        return refuse(undefined, `holds a value of type "${String(cell.t)}": ${AS_TEXT}`);
    }
  }

  /** A numeric cell's text: the shortest decimal that reads back as the stored double. */
  private number(
    cell: CellObject,
    row: number,
    field: PayoutField,
    refuse: (value: string | undefined, message: string) => null,
  ): string | null {
    const value = cell.v as number;
    const format = typeof cell.z === 'string' ? cell.z : undefined;
    const isDate = format !== undefined && this.lib.SSF.is_date(format) === true;
    if (isDate) {
      const shown = String(this.lib.SSF.format(format, value));
      if (field === 'amount' || field === 'reference_id') {
        return refuse(
          shown,
          `holds a date, not ${field === 'amount' ? 'an amount' : 'a reference'}: ${AS_TEXT}`,
        );
      }
      return shown;
    }
    const text = plainNumberText(value);
    if (text === undefined)
      return refuse(undefined, `holds a number that is not finite: ${AS_TEXT}`);
    if (field !== 'reference_id' && field !== 'recipient') return text;
    if (!Number.isInteger(value) || value < 0) {
      return refuse(
        text,
        `holds a number, not ${field === 'recipient' ? 'a recipient' : 'a reference'}: ${AS_TEXT}`,
      );
    }
    if (value >= EXACT_INTEGER_LIMIT) {
      return refuse(
        text,
        `holds a number of 16 or more digits; Excel keeps 15 significant digits of a number, so digits may already be lost: ${AS_TEXT}`,
      );
    }
    const n = this.numericIds;
    if (n === undefined) this.numericIds = { row, count: 1, fields: new Set([field]) };
    else {
      n.count++;
      n.fields.add(field);
    }
    return text;
  }
}

/** Reads the first sheet (or --sheet) of an .xlsx source, reporting to the sink. */
export async function readXlsx(source: InputSource, s: XlsxSettings): Promise<FileMeta> {
  const fail = (message: string) => s.checker.report(undefined, undefined, undefined, message);
  const bytes = await readWorkbookBytes(source, fail);
  if (bytes === undefined) return { rows: 0 };
  const lib = await import('@e965/xlsx');
  const sheet = openSheet(lib, bytes, s);
  if (sheet === undefined) return { rows: 0 };
  const rows = new SheetRows(lib, s, sheet.name);
  let started = false;
  for (let i = 0; i < sheet.rows.length; i++) {
    const cells = sheet.rows[i];
    if (cells === undefined || cells.every(isBlankCell)) continue;
    if (!started) {
      started = true;
      if (!rows.header(cells, i + 1)) return { rows: 0 };
      continue;
    }
    rows.row(cells, i + 1);
    if (rows.rows % ROWS_PER_READY === 0) {
      const wait = s.sink.ready?.();
      if (wait) await wait;
    }
  }
  rows.finish();
  if (rows.rows === 0) {
    s.checker.report(sheetLabel(sheet.name), undefined, undefined, 'no payouts in this sheet');
  }
  return { rows: rows.rows };
}
