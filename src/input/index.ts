/**
 * Input intake: reads payout rows from CSV, JSON, NDJSON and .xlsx sources, checks
 * every row, and hands valid payouts and problems to a sink. Nothing here sends anything.
 */
import { UsageError } from '../errors.js';
import { readCsv } from './csv.js';
import { PayoutChecker } from './fields.js';
import { readJson, readNdjson } from './json.js';
import { columnNames, detectFormat, parseDelimiterOption } from './options.js';
import type { FileMeta, InputSource, IntakeOptions, IntakeSink } from './types.js';
import { readXlsx } from './xlsx.js';

export { detectDelimiter } from './csv.js';
export { type InputEncoding, INPUT_ENCODINGS } from './encoding.js';
export { codePointLength, DESCRIPTION_MAX } from './fields.js';
export { detectFormat, parseDelimiterOption, parseMapOption } from './options.js';
export { ProblemList } from './problems.js';
export { fileSource } from './source.js';
export { templateText, templateWorkbook } from './template.js';
export type {
  FileMeta,
  InputFormat,
  InputSource,
  IntakeOptions,
  IntakeSink,
  PayoutField,
  ValidPayout,
} from './types.js';
export { PAYOUT_FIELDS, REQUIRED_FIELDS } from './types.js';

const FORMAT_NAMES = { csv: 'CSV', json: 'JSON', ndjson: 'NDJSON', xlsx: '.xlsx' } as const;

/**
 * Reads one source and checks every row. Data problems (including a file that cannot be
 * read) go to the sink; only usage problems (unknown format, bad --map) throw UsageError.
 * Deterministic, so a send can read the same file again to build its requests.
 */
export async function readPayouts(
  source: InputSource,
  opts: IntakeOptions,
  sink: IntakeSink,
): Promise<FileMeta> {
  const format = detectFormat(source.name, opts.format);
  const names = columnNames(opts.map);
  const delimiter = opts.delimiter === undefined ? undefined : parseDelimiterOption(opts.delimiter);
  const decimalComma = opts.decimalComma === true;
  if (decimalComma && format !== 'csv') {
    throw new UsageError(
      `${source.name}: --decimal-comma applies to CSV files only: in ${FORMAT_NAMES[format]}, write amounts as numbers or texts with a ".", such as 1234.56`,
    );
  }
  if (opts.includeHidden === true && format !== 'xlsx') {
    throw new UsageError(
      `${source.name}: --include-hidden applies to .xlsx workbooks only: leave it out for ${FORMAT_NAMES[format]} files`,
    );
  }
  if (opts.sheet !== undefined && format !== 'xlsx') {
    throw new UsageError(
      `${source.name}: --sheet applies to .xlsx workbooks only: leave it out for ${FORMAT_NAMES[format]} files`,
    );
  }
  const checker = new PayoutChecker(source.name, opts.currencies, sink, {
    decimalComma,
    hint: format === 'csv',
  });
  switch (format) {
    case 'csv':
      return readCsv(source, {
        file: source.name,
        delimiter,
        names,
        map: opts.map ?? {},
        encoding: opts.encoding,
        decimalComma,
        checker,
        sink,
      });
    case 'json':
      return readJson(source, checker, sink, opts.encoding);
    case 'ndjson':
      return readNdjson(source, checker, sink, opts.encoding);
    case 'xlsx':
      return readXlsx(source, {
        file: source.name,
        sheet: opts.sheet,
        includeHidden: opts.includeHidden === true,
        names,
        map: opts.map ?? {},
        checker,
        sink,
      });
  }
}
