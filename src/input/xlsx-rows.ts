/**
 * A sheet's cells read as payout rows, each cell by its stored type (text, number, formula
 * with its saved value, error), apart from finding the workbook's sheet (xlsx.ts).
 */
import type { CellObject } from '@e965/xlsx';
import { plainNumberText } from '../money/amount.js';
import type { PayoutChecker } from './fields.js';
import { unguardFormula } from './formula.js';
import { type HeaderColumns, matchHeader, rowReference } from './header.js';
import type { IntakeSink, PayoutField, Renames } from './types.js';

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

/** The xlsx library, loaded only for a workbook. */
export type Library = typeof import('@e965/xlsx');

/** How a sheet is named in locations: quoted when its name holds spaces or quotes. */
export function sheetLabel(name: string): string {
  return /^[^\s"]+$/.test(name) ? `sheet ${name}` : `sheet ${JSON.stringify(name)}`;
}

/** Whether a cell holds nothing: absent, an empty stub, or blank text. */
export function isBlankCell(cell: CellObject | undefined): boolean {
  if (cell === undefined || cell === null) return true;
  if (cell.t === 'z') return cell.f === undefined;
  return cell.t === 's' && String(cell.v).trim() === '';
}

/** The text of a header cell. */
export function headerText(cell: CellObject | undefined): string {
  if (cell === undefined || cell === null) return '';
  if (cell.t === 's') return String(cell.v);
  if (cell.t === 'n') return plainNumberText(cell.v as number) ?? '';
  return '';
}

/** Reads the cells of one sheet as payout rows. */
export class SheetRows {
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
