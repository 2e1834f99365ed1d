/**
 * Reader of .xlsx workbooks: one sheet, each cell taken by its stored type (text, number,
 * formula with its saved value, error: xlsx-rows.ts), then the same header matching and
 * checks as CSV.
 */
import type { CellObject } from '@e965/xlsx';
import { errorMessage } from '../errors.js';
import { renamesMeta } from './header.js';
import { normalizeHeader } from './options.js';
import { readErrorMessage } from './source.js';
import { type FileMeta, type InputSource, type PayoutField, REQUIRED_FIELDS } from './types.js';
import {
  headerText,
  isBlankCell,
  type Library,
  SheetRows,
  sheetLabel,
  type XlsxSettings,
} from './xlsx-rows.js';

/** A workbook is read whole (a zip cannot be read from its start alone): this bounds memory. */
const MAX_WORKBOOK_BYTES = 128 * 1024 * 1024;
/** Rows checked between two asks of the sink's backpressure. */
const ROWS_PER_READY = 256;

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
