import { resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { errorCode, errorMessage, formatProblem, UsageError } from '../../errors.js';
import { decodeWhole } from '../../input/encoding.js';
import { unguardFormula } from '../../input/formula.js';
import { checkReference } from './reference-check.js';

// The --from side of `payouts status`, in a module of its own: csv-parse is loaded only by a
// run that reads a file, not by every `payouts status REF`.

const DELIMITERS = [',', ';', '\t'] as const;

/** Whether a header cell names the reference_id column, ignoring case, spaces and dashes. */
export function isReferenceHeader(cell: string): boolean {
  const h = cell
    .replace(/^\uFEFF/, '')
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');
  return h === 'reference_id' || h === 'referenceid';
}

/** A record of a CSV file and the line it starts on. */
interface CsvRecord {
  cells: string[];
  line: number;
}

/** Parses CSV text, turning csv-parse's errors into a usage error that names the file. */
function parseCsv(text: string, delimiter: string, name: string, firstLine: number): CsvRecord[] {
  try {
    // With info, each record comes with the line it ends on (the typings do not say so).
    const records = parse(text, {
      delimiter,
      bom: true,
      relax_column_count: true,
      relax_quotes: true,
      skip_empty_lines: true,
      info: true,
    }) as unknown as Array<{ record: string[]; info: { lines: number } }>;
    return records.map(({ record, info }) => ({
      cells: record,
      // csv-parse counts every CR and LF it passes, those inside quoted cells included.
      line: info.lines + firstLine - 1 - lineBreaks(record),
    }));
  } catch (err) {
    throw new UsageError(csvProblem(text, delimiter, name, firstLine, err));
  }
}

/**
 * What is wrong with a CSV text csv-parse refused, in the words of lines and columns (the
 * only error its relaxed settings leave is a quote never closed), not in the parser's.
 */
function csvProblem(
  text: string,
  delimiter: string,
  name: string,
  firstLine: number,
  err: unknown,
): string {
  const open = unclosedQuote(text, delimiter);
  if (open) {
    return formatProblem({
      file: name,
      location: `line ${open.line + firstLine - 1}, column ${open.column}`,
      message:
        'the quote (") that opens this cell is never closed, so the rest of the file would be one cell: close it with another quote, or remove it',
    });
  }
  const lines = (err as { lines?: number }).lines;
  return formatProblem({
    file: name,
    location: lines === undefined ? undefined : `line ${lines + firstLine - 1}`,
    message: `cannot be read as CSV with the delimiter ${JSON.stringify(delimiter)}: check this line's quotes and delimiters, or list one reference per line`,
  });
}

/** Where a quoted cell that never closes opens: its line (from 1) and column (its cell, from 1). */
export function unclosedQuote(
  text: string,
  delimiter: string,
): { line: number; column: number } | undefined {
  let line = 1;
  let column = 1;
  let atStart = true;
  let open: { line: number; column: number } | undefined;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (open) {
      if (ch === '\n') line += 1;
      if (ch !== '"') continue;
      if (text[i + 1] === '"') i += 1;
      else open = undefined;
      continue;
    }
    if (ch === '\n') {
      line += 1;
      column = 1;
      atStart = true;
    } else if (ch === delimiter) {
      column += 1;
      atStart = true;
    } else if (ch === '"' && atStart) {
      open = { line, column };
    } else atStart = false;
  }
  return open;
}

/** How many CR and LF characters a record's cells hold. */
function lineBreaks(cells: string[]): number {
  let n = 0;
  for (const cell of cells) n += cell.match(/[\r\n]/g)?.length ?? 0;
  return n;
}

/** Finds the delimiter and column of reference_id in a header line, if it is one. */
function findHeader(line: string, name: string): { delimiter: string; column: number } | undefined {
  for (const delimiter of DELIMITERS) {
    if (!line.includes(delimiter)) continue;
    const cells = parseCsv(line, delimiter, name, 1)[0]?.cells ?? [];
    const column = cells.findIndex(isReferenceHeader);
    if (column >= 0) return { delimiter, column };
  }
  // A CSV of a single column has no delimiter at all: its header alone says it is CSV.
  if (isReferenceHeader(line.replace(/^"|"$/g, ''))) return { delimiter: ',', column: 0 };
  return undefined;
}

/**
 * Reads references from a file's text: either a plain list (one per line, blank lines and
 * `#` comments skipped) or a CSV with a reference_id column (delimiter , ; or tab), such as
 * the report of `payouts send`. `name` is how the user named the file, for messages.
 */
export function parseReferenceText(content: string, name: string): string[] {
  const text = content.replace(/^\uFEFF/, '');
  const lines = text.split(/\r?\n/);
  const first = lines.findIndex((l) => l.trim() !== '' && !l.trim().startsWith('#'));
  if (first < 0) return [];
  const headerLine = lines[first] ?? '';
  const header = findHeader(headerLine, name);
  if (!header) {
    if (DELIMITERS.some((d) => headerLine.includes(d))) {
      throw new UsageError(
        formatProblem({
          file: name,
          location: `line ${first + 1}`,
          message:
            'this looks like CSV but has no reference_id column: add a reference_id header, or list one reference per line',
        }),
      );
    }
    return listReferences(lines, name);
  }
  const refs: string[] = [];
  const rows = parseCsv(lines.slice(first).join('\n'), header.delimiter, name, first + 1);
  for (const row of rows.slice(1)) {
    const ref = unguardFormula((row.cells[header.column] ?? '').trim());
    if (ref === '') continue;
    checkReference(ref, { file: name, line: row.line });
    refs.push(ref);
  }
  return refs;
}

/** The references of a plain list: one a line, blank lines and `#` comments skipped. */
function listReferences(lines: string[], name: string): string[] {
  const refs: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const ref = lines[i]!.trim();
    if (ref === '' || ref.startsWith('#')) continue;
    checkReference(ref, { file: name, line: i + 1 });
    refs.push(ref);
  }
  return refs;
}

/** Where a references file is read from: the process's working folder and standard input. */
export interface ReferenceFileContext {
  cwd: string;
  stdin: Readable;
}

/** Reads the references of one --from file; `-` is standard input. */
export async function readReferenceFile(
  path: string,
  ctx: ReferenceFileContext,
): Promise<string[]> {
  // Imported here: fs/promises (which loads readline) and stream/consumers cost every
  // `payouts status REF` start-up, and only --from reads a file.
  if (path === '-') {
    const { buffer } = await import('node:stream/consumers');
    return parseReferenceText(decodeReferences(await buffer(ctx.stdin), path), '-');
  }
  const { readFile } = await import('node:fs/promises');
  let content: Buffer;
  try {
    content = await readFile(resolve(ctx.cwd, path));
  } catch (err) {
    const code = errorCode(err);
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EISDIR'
          ? 'is a folder, not a file'
          : code === 'EACCES'
            ? 'permission denied'
            : errorMessage(err);
    throw new UsageError(`--from ${path}: ${why}`);
  }
  return parseReferenceText(decodeReferences(content, path), path);
}

/** The text of a references file: UTF-16 with a byte-order mark (Excel "Unicode text"), else UTF-8. */
function decodeReferences(bytes: Buffer, path: string): string {
  try {
    return decodeWhole(bytes);
  } catch {
    throw new UsageError(
      `--from ${path}: the file starts with a UTF-16 byte-order mark but holds a broken character: save it again as "CSV UTF-8" or "Unicode text"`,
    );
  }
}
