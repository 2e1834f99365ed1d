/**
 * Reader of .xlsx workbooks: one sheet, each cell taken by its stored type (text, number,
 * formula with its saved value, error), then the same header matching and checks as CSV.
 */
import type { CellObject } from '@e965/xlsx';
import { errorMessage } from '../errors.js';
import { plainNumberText } from '../money/amount.js';
import type { PayoutChecker } from './fields.js';
import { unguardFormula } from './formula.js';
import { type HeaderColumns, matchHeader, renamesMeta, rowReference } from './header.js';
import { normalizeHeader } from './options.js';
import { readErrorMessage } from './source.js';
import {
  type FileMeta,
  type InputSource,
  type IntakeSink,
  type PayoutField,
  type Renames,
  REQUIRED_FIELDS,
} from './types.js';

/** What the .xlsx reader needs besides the source. */
export interface XlsxSettings {
  file: string;
  /** --sheet; else the first visible sheet. */
  sheet: string | undefined;
  /** --include-hidden: read hidden rows too; else they are refused. */
  includeHidden: boolean;
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

/** A sheet of a workbook: its name and whether Excel hides it (hidden or very hidden). */
interface SheetEntry {
  name: string;
  hidden: boolean;
}

/**
 * The sheet to read: --sheet (exactly, else ignoring case; a hidden one too, since it is
 * named), or the first visible sheet; undefined if none.
 */
function pickSheet(sheets: SheetEntry[], wanted: string | undefined): string | undefined {
  if (wanted === undefined) return sheets.find((e) => !e.hidden)?.name;
  const folded = wanted.toLowerCase();
  return (
    sheets.find((e) => e.name === wanted)?.name ??
    sheets.find((e) => e.name.toLowerCase() === folded)?.name
  );
}

/** A sheet read for its payouts: its cells, and which rows (1-based) Excel hides. */
interface OpenedSheet {
  name: string;
  rows: CellObject[][];
  hiddenRows: Set<number>;
  /** The workbook's sheets, to name those with a payout header when this one has none. */
  sheets: SheetEntry[];
}

/** The sheets of a workbook, read without their cells. */
function sheetsOf(lib: Library, bytes: Buffer): SheetEntry[] {
  // `sheets: []` parses the workbook part only: names, and each sheet's Hidden (0, 1 or 2).
  const book = lib.read(bytes, { type: 'buffer', sheets: [] });
  const props = book.Workbook?.Sheets ?? [];
  return book.SheetNames.map((name, i) => ({ name, hidden: Boolean(props[i]?.Hidden) }));
}

/** The message for a workbook whose sheet cannot be chosen. */
function noSheetMessage(sheets: SheetEntry[], wanted: string | undefined): string {
  const list = sheets.map((e) => JSON.stringify(e.name)).join(', ');
  if (sheets.length === 0) return 'has no sheets: check that it is the right file';
  if (wanted === undefined)
    return `has only hidden sheets (${list}): unhide the sheet to pay in Excel, or name it with --sheet`;
  return `has no sheet "${wanted}"; its sheets are ${list}: pass one of them to --sheet`;
}

/** Checks the bytes are an .xlsx zip; reports and returns false when not. */
function isWorkbook(bytes: Buffer, fail: (message: string) => void): boolean {
  // An .xlsx file is a zip; anything else (an old .xls renamed, a CSV) is refused unread.
  // Excel saves a workbook with a password to open as an OLE compound file, as it saves .xls.
  if (bytes.length >= 4 && bytes.readUInt32LE(0) === 0xe011cfd0) {
    fail(
      'is a workbook with a password to open, or an old .xls: open it in Excel, remove the password and save it as "Excel Workbook (.xlsx)"',
    );
    return false;
  }
  if (bytes.length < 4 || bytes.readUInt32LE(0) !== 0x04034b50) {
    fail(
      'is not an .xlsx workbook (an .xlsx file is a zip archive): open it in Excel and save it as "Excel Workbook (.xlsx)", or pass its real format with --format',
    );
    return false;
  }
  return true;
}

/** Parses the workbook (only the sheet wanted); undefined when it is not one (reported). */
function openSheet(lib: Library, bytes: Buffer, s: XlsxSettings): OpenedSheet | undefined {
  const fail = (message: string) => s.checker.report(undefined, undefined, undefined, message);
  if (!isWorkbook(bytes, fail)) return undefined;
  try {
    const sheets = sheetsOf(lib, bytes);
    const sheet = pickSheet(sheets, s.sheet);
    if (sheet === undefined) {
      fail(noSheetMessage(sheets, s.sheet));
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
      // Row properties, among them which rows are hidden, come with the styles.
      cellStyles: true,
      cellText: false,
      cellHTML: false,
      cellDates: false,
    });
    const ws = book.Sheets[sheet] as
      | { '!data'?: CellObject[][]; '!rows'?: Array<{ hidden?: boolean } | undefined> }
      | undefined;
    const hiddenRows = new Set<number>();
    ws?.['!rows']?.forEach((r, i) => {
      if (r?.hidden) hiddenRows.add(i + 1);
    });
    return { name: sheet, rows: ws?.['!data'] ?? [], hiddenRows, sheets };
  } catch (err) {
    fail(
      `cannot be read as an .xlsx workbook (${errorMessage(err)}): open it in Excel and save it again as "Excel Workbook (.xlsx)"`,
    );
    return undefined;
  }
}

/** The first row with a cell in it, as header texts, and its number (1-based). */
function firstRow(rows: CellObject[][]): { texts: string[]; row: number } | undefined {
  for (let i = 0; i < rows.length; i++) {
    const cells = rows[i];
    if (cells === undefined || cells.every(isBlankCell)) continue;
    return { texts: cells.map((c) => headerText(c)), row: i + 1 };
  }
  return undefined;
}

/** Whether a header row names every required payout field (as matchHeader would find them). */
function isPayoutHeader(texts: string[], names: Map<string, PayoutField>): boolean {
  const found = new Set(texts.map((t) => names.get(normalizeHeader(t))));
  return REQUIRED_FIELDS.every((f) => found.has(f));
}

/** The other sheets of a workbook whose first row is a payout header. */
function sheetsWithHeader(lib: Library, bytes: Buffer, s: XlsxSettings, but: string): string[] {
  // Only the first rows of each sheet are parsed: a header sits at the top.
  const book = lib.read(bytes, { type: 'buffer', dense: true, sheetRows: 50 });
  return book.SheetNames.filter((name) => {
    if (name === but) return false;
    const rows = (book.Sheets[name] as { '!data'?: CellObject[][] } | undefined)?.['!data'];
    const head = rows && firstRow(rows);
    return head !== undefined && isPayoutHeader(head.texts, s.names);
  });
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
  /** The header's columns, once it is read. */
  columns: HeaderColumns | undefined;
  readonly renames: Renames = { count: 0, examples: [] };
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
    // A retry file saved from a spreadsheet keeps the formula guard it was written with.
    const retry = c.newReference !== -1;
    const read = (i: number, field: PayoutField) => {
      const text = this.cell(cells[i], i, row, field);
      return retry && text !== null ? unguardFormula(text) : text;
    };
    const ref = rowReference(
      c,
      (i) => read(i, 'reference_id'),
      (v) => v !== null && v.trim() === '',
      this.renames,
    );
    this.s.checker.check(
      this.at(row),
      ref.reference,
      read(c.amount, 'amount'),
      read(c.currency, 'currency'),
      read(c.recipient, 'recipient'),
      c.description === -1 ? undefined : read(c.description, 'description'),
      ref.retryOf,
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
    const noise = field === 'amount' ? floatNoise(value, text, cell.f) : undefined;
    if (noise !== undefined) return refuse(text, noise);
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

/**
 * Why an amount cell's number is a calculation's binary rounding (0.1 + 0.2 stores
 * 0.30000000000000004, which Excel shows as 0.3), or undefined: its 15 significant digits,
 * all Excel shows, make a shorter decimal than the double it stores.
 */
function floatNoise(value: number, text: string, formula: string | undefined): string | undefined {
  const shown = plainNumberText(Number(value.toPrecision(15)));
  if (shown === undefined || shown === text) return undefined;
  const from = formula === undefined ? 'a calculation' : `=${formula}`;
  return `holds ${text}, which Excel shows as ${shown}: the stored number of ${from} carries binary rounding; round it in the sheet (=ROUND(…,2), in a German Excel =RUNDEN(…;2)) or type the amount as text`;
}

/** Lists row numbers for a message: "rows 4, 9 and 12", the first 20 and how many more. */
function rowList(rows: number[]): string {
  const shown = rows.slice(0, 20).map(String);
  if (rows.length > 20) shown.push(`${rows.length - 20} more`);
  const last = shown.pop();
  return `row${rows.length === 1 ? '' : 's'} ${shown.length ? `${shown.join(', ')} and ${last}` : last}`;
}

/**
 * When the first visible sheet was taken and has no payout header, one problem naming the
 * sheets that have one (with --sheet to pick one); false when there are none to name.
 */
function reportOtherSheets(
  lib: Library,
  bytes: Buffer,
  s: XlsxSettings,
  sheet: OpenedSheet,
): boolean {
  if (s.sheet !== undefined) return false;
  const head = firstRow(sheet.rows);
  if (head !== undefined && isPayoutHeader(head.texts, s.names)) return false;
  const others = sheetsWithHeader(lib, bytes, s, sheet.name);
  if (others.length === 0) return false;
  const which = others.map((n) => JSON.stringify(n)).join(', ');
  s.checker.report(
    sheetLabel(sheet.name),
    undefined,
    undefined,
    `the first visible sheet has no payout header (reference_id, amount, currency, recipient); ${others.length === 1 ? 'the sheet' : 'the sheets'} ${which} ${others.length === 1 ? 'has' : 'have'} one: pass --sheet ${/^[\w.-]+$/.test(others[0]!) ? others[0] : JSON.stringify(others[0])}`,
  );
  return true;
}

/** Reads the first visible sheet (or --sheet) of an .xlsx source, reporting to the sink. */
export async function readXlsx(source: InputSource, s: XlsxSettings): Promise<FileMeta> {
  const fail = (message: string) => s.checker.report(undefined, undefined, undefined, message);
  const bytes = await readWorkbookBytes(source, fail);
  if (bytes === undefined) return { rows: 0 };
  const lib = await import('@e965/xlsx');
  const sheet = openSheet(lib, bytes, s);
  if (sheet === undefined) return { rows: 0 };
  if (reportOtherSheets(lib, bytes, s, sheet)) return { rows: 0, sheet: sheet.name };
  const rows = new SheetRows(lib, s, sheet.name);
  const hidden: number[] = [];
  let started = false;
  for (let i = 0; i < sheet.rows.length; i++) {
    const cells = sheet.rows[i];
    if (cells === undefined || cells.every(isBlankCell)) continue;
    if (!started) {
      started = true;
      if (!rows.header(cells, i + 1)) return { rows: 0, sheet: sheet.name };
      continue;
    }
    if (sheet.hiddenRows.has(i + 1)) hidden.push(i + 1);
    rows.row(cells, i + 1);
    if (rows.rows % ROWS_PER_READY === 0) {
      const wait = s.sink.ready?.();
      if (wait) await wait;
    }
  }
  rows.finish();
  if (hidden.length > 0 && !s.includeHidden) {
    s.checker.report(
      sheetLabel(sheet.name),
      undefined,
      undefined,
      `${rowList(hidden)} ${hidden.length === 1 ? 'is' : 'are'} hidden in Excel, so whoever checked the sheet may not have seen ${hidden.length === 1 ? 'it' : 'them'}: unhide ${hidden.length === 1 ? 'it' : 'them'} and check, or delete ${hidden.length === 1 ? 'it' : 'them'}; to pay hidden rows as they are, pass --include-hidden`,
    );
  }
  if (rows.rows === 0) {
    s.checker.report(sheetLabel(sheet.name), undefined, undefined, 'no payouts in this sheet');
  }
  return { rows: rows.rows, sheet: sheet.name, ...renamesMeta(rows.renames, rows.columns) };
}
