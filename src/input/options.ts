/** Command-line options of the intake: --format, --delimiter and --map. */
import { extname } from 'node:path';
import { UsageError } from '../errors.js';
import { type InputFormat, PAYOUT_FIELDS, type PayoutField } from './types.js';

const FORMAT_BY_EXTENSION: Readonly<Record<string, InputFormat>> = {
  '.csv': 'csv',
  '.tsv': 'csv',
  '.txt': 'csv',
  '.json': 'json',
  '.ndjson': 'ndjson',
  '.jsonl': 'ndjson',
  '.xlsx': 'xlsx',
};

const FORMATS = 'csv, json, ndjson or xlsx';
const SPREADSHEET_EXTENSIONS = new Set(['.xls', '.xlsm', '.xlsb', '.ods', '.numbers']);

/** The format of a file: the explicit one, else from its extension. */
export function detectFormat(name: string, explicit?: InputFormat): InputFormat {
  if (explicit !== undefined) {
    if (Object.values(FORMAT_BY_EXTENSION).includes(explicit)) return explicit;
    throw new UsageError(`unknown format "${explicit}": use --format ${FORMATS}`);
  }
  if (name === '-') {
    throw new UsageError(
      `reading payouts from standard input needs the format: pass --format ${FORMATS}`,
    );
  }
  const ext = extname(name).toLowerCase();
  const format = FORMAT_BY_EXTENSION[ext];
  if (format !== undefined) return format;
  if (SPREADSHEET_EXTENSIONS.has(ext)) {
    throw new UsageError(
      `${name}: only .xlsx workbooks are read directly: save it as an Excel Workbook (.xlsx) or as "CSV UTF-8" and pass that file`,
    );
  }
  throw new UsageError(
    `${name}: cannot tell the format from the extension ${ext === '' ? '(there is none)' : `"${ext}"`}: ` +
      `pass --format ${FORMATS}, or name the file .csv, .json, .ndjson or .xlsx`,
  );
}

const DELIMITER_WORDS: Readonly<Record<string, string>> = {
  ',': ',',
  comma: ',',
  ';': ';',
  semicolon: ';',
  '\t': '\t',
  '\\t': '\t',
  tab: '\t',
};

/** Reads --delimiter (or `flag`): ',', ';' or a tab (written as a tab, 'tab' or '\t'). */
export function parseDelimiterOption(text: string, flag = '--delimiter'): string {
  const d = DELIMITER_WORDS[text] ?? DELIMITER_WORDS[text.trim().toLowerCase()];
  if (d !== undefined) return d;
  throw new UsageError(`${flag} ${JSON.stringify(text)} is not supported: use ",", ";" or "tab"`);
}

/** A delimiter as the user would name it in a message. */
export function delimiterName(d: string): string {
  return d === '\t' ? 'tab' : `"${d}"`;
}

/** Splits on commas outside double quotes, so a quoted header name may hold a comma. */
function splitOutsideQuotes(text: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    if (ch === ',' && !quoted) {
      parts.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  parts.push(current);
  return parts;
}

/** Removes one pair of surrounding double quotes, if any. */
function unquote(text: string): string {
  return text.length >= 2 && text.startsWith('"') && text.endsWith('"') ? text.slice(1, -1) : text;
}

/** Reads --map 'amount=Betrag,reference_id="Ref"': header names standing for payout fields. */
export function parseMapOption(text: string): Partial<Record<PayoutField, string>> {
  const map: Partial<Record<PayoutField, string>> = {};
  for (const part of splitOutsideQuotes(text)) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    if (eq === -1) {
      throw new UsageError(
        `--map: "${part.trim()}" has no "=": write field=header, such as amount="Betrag"`,
      );
    }
    const field = part.slice(0, eq).trim().toLowerCase();
    const header = unquote(part.slice(eq + 1).trim()).trim();
    if (!(PAYOUT_FIELDS as readonly string[]).includes(field)) {
      throw new UsageError(
        `--map: "${part.trim()}" names no payout field: the fields are ${PAYOUT_FIELDS.join(', ')}`,
      );
    }
    if (header === '') {
      throw new UsageError(`--map: "${part.trim()}" has no header name after "="`);
    }
    if (map[field as PayoutField] !== undefined) {
      throw new UsageError(`--map: ${field} is given twice: keep one`);
    }
    map[field as PayoutField] = header;
  }
  columnNames(map);
  return map;
}

/**
 * Normalizes a header the way headers are matched: case, spaces, hyphens and underscores do
 * not count, so "Reference ID", "reference-id" and "REFERENCE_ID" all name reference_id.
 */
export function normalizeHeader(name: string): string {
  // \s also matches a BOM (U+FEFF) and the no-break spaces that spreadsheets leave behind.
  return name.toLowerCase().replace(/[\s_-]+/g, '');
}

/**
 * The normalized column name of every field: its --map name, else the field itself.
 * Throws UsageError when two fields would read the same column.
 */
export function columnNames(
  map: Partial<Record<PayoutField, string>> = {},
): Map<string, PayoutField> {
  const byName = new Map<string, PayoutField>();
  for (const field of PAYOUT_FIELDS) {
    const name = normalizeHeader(map[field] ?? field);
    const other = byName.get(name);
    if (other !== undefined) {
      throw new UsageError(
        `--map: ${other} and ${field} would both read the column "${name}": give each field its own column`,
      );
    }
    byName.set(name, field);
  }
  return byName;
}
