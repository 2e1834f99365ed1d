/** Streaming reader of CSV payout files: one pass, one record at a time, flat memory. */
import { once } from 'node:events';
import { type CsvError, type Parser, parse } from 'csv-parse';
import { errorCode } from '../errors.js';
import { readChunks } from './chunks.js';
import { type InputEncoding, isUtf16 } from './encoding.js';
import type { PayoutChecker } from './fields.js';
import { unguardFormula } from './formula.js';
import { type HeaderColumns, matchHeader, renamesMeta, rowReference } from './header.js';
import { delimiterName } from './options.js';
import type { FileMeta, InputSource, IntakeSink, PayoutField, Renames } from './types.js';

/** What the CSV reader needs besides the source. */
export interface CsvSettings {
  file: string;
  /** Explicit delimiter, else detected from the header line. */
  delimiter?: string;
  /** From --encoding (a byte-order mark wins over it). */
  encoding: InputEncoding | undefined;
  /** --decimal-comma: ";" is then the delimiter when the header line does not tell. */
  decimalComma: boolean;
  /** Normalized column name -> field. */
  names: Map<string, PayoutField>;
  map: Partial<Record<PayoutField, string>>;
  checker: PayoutChecker;
  sink: IntakeSink;
}

const COMMA = 0x2c;
const SEMICOLON = 0x3b;
const TAB = 0x09;
const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;
/** How far to look for the end of the header line before deciding on the delimiter anyway. */
const DETECT_LIMIT = 1 << 20;
/** A record this long means a quote was never closed: stop before it eats the memory. */
const MAX_RECORD_BYTES = 1 << 20;
const MIXED_LINE_ENDINGS =
  'the file mixes CRLF and LF line endings: save it again from the spreadsheet, or convert it to one kind of line ending';

/**
 * The delimiter of a CSV text: the one of , ; and tab that occurs most outside quotes on
 * the header line (ties go to `preferred`, else comma, then semicolon). Undefined while the
 * header line is not complete, unless `final`.
 */
export function detectDelimiter(
  bytes: Uint8Array,
  final: boolean,
  preferred = ',',
): string | undefined {
  let comma = 0;
  let semicolon = 0;
  let tab = 0;
  let content = false;
  let quoted = false;
  const start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  for (let i = start; i < bytes.length; i++) {
    const c = bytes[i];
    if (c === QUOTE) {
      quoted = !quoted;
      content = true;
    } else if (quoted) {
    } else if (c === LF || c === CR) {
      if (content) return pickDelimiter(comma, semicolon, tab, preferred);
    } else if (c === COMMA) comma++;
    else if (c === SEMICOLON) semicolon++;
    else if (c === TAB) tab++;
    else if (c !== 0x20) content = true;
  }
  return final ? pickDelimiter(comma, semicolon, tab, preferred) : undefined;
}

function pickDelimiter(comma: number, semicolon: number, tab: number, preferred: string): string {
  const most = Math.max(comma, semicolon, tab);
  if ((preferred === '\t' ? tab : preferred === ';' ? semicolon : comma) === most) return preferred;
  if (tab > comma && tab > semicolon) return '\t';
  if (semicolon > comma) return ';';
  return ',';
}

/** Counts the line breaks inside a field (CRLF, LF or CR each count once). */
function countBreaks(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === LF) n++;
    else if (c === CR) {
      n++;
      if (s.charCodeAt(i + 1) === LF) i++;
    }
  }
  return n;
}

/** Line breaks inside a record's fields: the lines it spans beyond its first. */
function recordBreaks(rec: string[]): number {
  let n = 0;
  const last = rec.length - 1;
  for (let i = 0; i <= last; i++) {
    const f = rec[i]!;
    if (f.indexOf('\n') !== -1 || f.indexOf('\r') !== -1) {
      n += countBreaks(f);
      // A CRLF line in a file whose lines end in LF leaves its CR at the end of the record.
      if (i === last && f.charCodeAt(f.length - 1) === CR) n--;
    }
  }
  return n;
}

/** Whether every field of a record is empty or spaces (a blank line, or ",,,," left by a sheet). */
function isBlank(rec: string[]): boolean {
  for (let i = 0; i < rec.length; i++) {
    const f = rec[i]!;
    if (f.length !== 0 && (f.charCodeAt(0) > 32 || f.trim() !== '')) return false;
  }
  return true;
}

/** Explains a csv-parse error; the parse cannot go on after one. */
function csvErrorMessage(err: CsvError | Error): string {
  const stopped = '; the rest of the file was not read';
  switch (errorCode(err)) {
    case 'INVALID_OPENING_QUOTE':
      return `a field has a quote inside it but does not start with one: put the whole field in quotes and double the inner quote, such as "12"" screen"${stopped}`;
    case 'CSV_INVALID_CLOSING_QUOTE':
      // csv-parse names the character after the quote; a line end there means mixed endings.
      if (/got "[\r\n]"/.test(err.message)) return MIXED_LINE_ENDINGS + stopped;
      return `a quoted field goes on after its closing quote: double every quote inside a quoted field ("")${stopped}`;
    case 'CSV_QUOTE_NOT_CLOSED':
      return 'a quoted field starting on this line is never closed: add the closing quote';
    default:
      return `cannot be read as CSV (${err.message})${stopped}`;
  }
}

/** Handles the parsed records of one file, in order: header first, then rows. */
class CsvRecords {
  /** Physical line on which the next record starts. */
  line = 1;
  rows = 0;
  /** Set when the header makes the rows unreadable: no row is checked then. */
  stop = false;
  /** Set when a record grew past MAX_RECORD_BYTES: most likely a quote never closed. */
  tooLong = false;
  /** Whether a quote has been fed to the parser: only quoted fields hold line breaks. */
  quotesSeen = false;
  /** The parser's running counts (set once it exists): they tell a record with no line break. */
  info: { readonly lines: number; readonly records: number } | undefined;
  /** Records handed to onRecord so far. */
  private handled = 0;
  /** The parser's line count when the previous record was handled (-1: not known). */
  private linesBefore = 0;
  sawHeader = false;
  private width = 0;
  private iAmount = -1;
  private iCurrency = -1;
  private iRecipient = -1;
  private iDescription = -1;
  /** The header's columns, once it is read. */
  columns: HeaderColumns | undefined;
  readonly renames: Renames = { count: 0, examples: [] };

  constructor(
    private readonly s: CsvSettings,
    readonly delimiter: string,
  ) {}

  /** Takes one parsed record (arrow function: it is the parser's 'data' listener). */
  readonly onRecord = (rec: string[]): void => {
    const line = this.line;
    this.line = line + 1 + (this.onOneLine(rec) ? 0 : recordBreaks(rec));
    if (this.stop || isBlank(rec)) return;
    if (!this.sawHeader) {
      this.sawHeader = true;
      this.readHeader(rec, line);
      return;
    }
    this.rows++;
    if (rec.length !== this.width) {
      this.reportWidth(rec, line);
      return;
    }
    // A retry file (--failed-out) is written formula-guarded for a spreadsheet: each cell reads
    // back as it was before the guard (input/formula.ts).
    if (this.columns!.newReference !== -1)
      for (let i = 0; i < rec.length; i++) rec[i] = unguardFormula(rec[i]!);
    const ref = rowReference(
      this.columns!,
      (i) => rec[i]!,
      (v) => v.trim() === '',
      this.renames,
    );
    this.s.checker.check(
      line,
      ref.reference,
      rec[this.iAmount]!,
      rec[this.iCurrency]!,
      rec[this.iRecipient]!,
      this.iDescription === -1 ? undefined : rec[this.iDescription]!,
      ref.retryOf,
    );
  };

  /**
   * Whether a record surely holds no line break, so its fields need no scan for one. Before
   * any quote, a record of the header's width cannot span lines. Else csv-parse's line count
   * tells: it goes up once for each CR or LF it passes (twice for a CRLF inside quotes) and
   * a record is emitted on reaching its end, before its own line end is counted, so the
   * count rose by exactly one since the previous record only when this one has no CR or LF.
   * That holds only while records arrive as they are parsed, which the parser's record count
   * agreeing with ours confirms; otherwise the fields are scanned, as they always were.
   */
  private onOneLine(rec: string[]): boolean {
    const handled = ++this.handled;
    const info = this.info;
    let lines = -1;
    if (info !== undefined && info.records === handled) lines = info.lines;
    const before = this.linesBefore;
    this.linesBefore = lines;
    if (!this.quotesSeen && rec.length === this.width) return true;
    return before !== -1 && lines === before + 1;
  }

  private reportWidth(rec: string[], line: number): void {
    let message =
      `has ${rec.length} field${rec.length === 1 ? '' : 's'} but the header has ${this.width}: ` +
      `check this line for a missing or extra ${delimiterName(this.delimiter)} and for unbalanced quotes`;
    // Rows merged across an LF in a CRLF file hold that LF in a field.
    if (rec.length > this.width && rec.some((f) => f.includes('\n'))) {
      message += `; if its line break is not inside quotes, ${MIXED_LINE_ENDINGS}`;
    }
    this.s.checker.report(line, undefined, undefined, message);
  }

  private readHeader(rec: string[], line: number): void {
    const columns = matchHeader(rec, line, {
      ...this.s,
      singleColumnHint: ` (the header reads as a single column with the delimiter ${delimiterName(this.delimiter)}: if the file uses another one, pass --delimiter)`,
    });
    if (columns === undefined) {
      this.stop = true;
      return;
    }
    this.width = rec.length;
    this.columns = columns;
    this.iAmount = columns.amount;
    this.iCurrency = columns.currency;
    this.iRecipient = columns.recipient;
    this.iDescription = columns.description;
  }
}

/** A parser and the promise of how it ended (its error, if any). */
interface RunningParser {
  parser: Parser;
  records: CsvRecords;
  ended: Promise<Error | undefined>;
  /** Bytes written since a record last ended. */
  pendingBytes: number;
}

function startParser(s: CsvSettings, delimiter: string): RunningParser {
  const records = new CsvRecords(s, delimiter);
  const parser = parse({
    delimiter,
    bom: true,
    // Rows of the wrong width are reported by CsvRecords, so that reading goes on.
    relax_column_count: true,
    // Blank lines come through as records so that line numbers count them.
    skip_empty_lines: false,
    // Line ends are detected (CRLF, LF or CR) from the first one: a list of all three
    // costs about 10% of the parse. A file mixing them still reads, or gets its rows
    // reported as having too many fields, never silently merged.
    // No max_record_size either (it costs a check per byte): feed() watches the same thing.
  });
  const ended = new Promise<Error | undefined>((resolve) => {
    parser.on('error', resolve);
    parser.on('end', () => resolve(undefined));
    parser.on('close', () => resolve(undefined));
  });
  // A synchronous listener: records are handled as the parser emits them, with no await.
  parser.on('data', records.onRecord);
  records.info = parser.info;
  return { parser, records, ended, pendingBytes: 0 };
}

/** Writes a chunk to the parser; false once the file should not be read further. */
async function feed(p: RunningParser, chunk: Buffer): Promise<boolean> {
  const line = p.records.line;
  if (!p.records.quotesSeen && chunk.indexOf(QUOTE) !== -1) p.records.quotesSeen = true;
  p.parser.write(chunk);
  if (p.records.stop || p.parser.destroyed) return false;
  p.pendingBytes = p.records.line === line ? p.pendingBytes + chunk.length : 0;
  if (p.pendingBytes > MAX_RECORD_BYTES) {
    p.records.tooLong = true;
    return false;
  }
  if (p.parser.writableNeedDrain) {
    try {
      await once(p.parser, 'drain');
    } catch {
      return false;
    }
  }
  return !p.records.stop && !p.parser.destroyed;
}

/** Reads a CSV source, reporting each valid row and every problem to the sink. */
export async function readCsv(source: InputSource, s: CsvSettings): Promise<FileMeta> {
  let running: RunningParser | undefined;
  const pending: Buffer[] = [];
  let pendingBytes = 0;
  const fail = (location: string | undefined, message: string): void =>
    s.checker.report(location, undefined, undefined, message);

  // UTF-16 text is Excel's "Unicode text", which is tab-separated; decimal commas go with ";".
  let preferred = s.decimalComma ? ';' : ',';
  const start = (final: boolean): RunningParser | undefined => {
    const head = pending.length === 1 ? pending[0]! : Buffer.concat(pending);
    const delimiter =
      s.delimiter ?? detectDelimiter(head, final || pendingBytes >= DETECT_LIMIT, preferred);
    if (delimiter === undefined) return undefined;
    const p = startParser(s, delimiter);
    pending.length = 0;
    p.records.quotesSeen = head.indexOf(QUOTE) !== -1;
    if (head.length > 0) p.parser.write(head);
    return p;
  };

  const outcome = await readChunks(
    source,
    { csv: true, encoding: s.encoding, fail, ready: s.sink.ready?.bind(s.sink) },
    (chunk, encoding) => {
      if (running !== undefined) return feed(running, chunk);
      if (isUtf16(encoding)) preferred = '\t';
      pending.push(chunk);
      pendingBytes += chunk.length;
      running = start(false);
      return running === undefined || (!running.records.stop && !running.parser.destroyed);
    },
  );

  if (outcome === 'done' && running === undefined) running = start(true);
  if (running === undefined) {
    if (outcome === 'done') fail(undefined, 'no payouts in this file');
    return { rows: 0 };
  }
  const { parser, records } = running;
  if (outcome === 'done' && !parser.destroyed && !records.stop) parser.end();
  else parser.destroy();
  const err = await running.ended;
  if (records.tooLong) {
    fail(
      `line ${records.line}`,
      `a record starting on this line is longer than ${MAX_RECORD_BYTES} bytes, so a quote is most likely never closed: check the quotes; the rest of the file was not read`,
    );
  } else if (err !== undefined) fail(`line ${records.line}`, csvErrorMessage(err));
  else if (outcome === 'done' && !records.stop && records.rows === 0) {
    fail(undefined, 'no payouts in this file');
  }
  return {
    rows: records.rows,
    ...renamesMeta(records.renames, records.columns),
    csv: { delimiter: records.delimiter, decimalComma: s.checker.decimalComma },
  };
}
