/**
 * The user's conventions, both ways (issue 49.1): a file read with `;` and decimal commas (a
 * German Excel's "CSV") gets its --report and --failed-out written the same way, so the
 * spreadsheet that wrote it opens them with amounts as numbers, and `payouts send` reads the
 * retry file back without flags (its header says `amount (decimal comma)`).
 */
import { UsageError } from '../errors.js';

/** How a CSV for people writes its cells: the delimiter, and the decimal mark of amounts. */
export interface CsvStyle {
  /** ",", ";" or a tab. */
  delimiter: string;
  /** Amounts (and charges) as `1234,56`, as spreadsheets where "," is the decimal mark read them. */
  decimalComma: boolean;
}

/** The style of a file read with no convention of its own: "," and a decimal point. */
export const PLAIN_STYLE: CsvStyle = { delimiter: ',', decimalComma: false };

const COMMA_STYLE: CsvStyle = { delimiter: ';', decimalComma: true };

/**
 * `--report-locale`: the spreadsheet conventions of a language. Excel and LibreOffice where
 * "," is the decimal mark (Germany, France, Spain, Italy, the Netherlands) separate cells
 * with ";"; in English, "," and ".".
 */
const LOCALES: Readonly<Record<string, CsvStyle>> = {
  de: COMMA_STYLE,
  fr: COMMA_STYLE,
  es: COMMA_STYLE,
  it: COMMA_STYLE,
  nl: COMMA_STYLE,
  en: PLAIN_STYLE,
};

/** The locales --report-locale takes, for its help and its refusal. */
export const REPORT_LOCALES = Object.keys(LOCALES);

/** Reads --report-locale: a language code (`de`, `de-DE` and `de_AT` name German alike). */
export function parseReportLocale(text: string): CsvStyle {
  const language = text.trim().toLowerCase().split(/[-_]/)[0] ?? '';
  const style = LOCALES[language];
  if (style) return style;
  throw new UsageError(
    `--report-locale ${JSON.stringify(text)} is not one this tool knows: use ${REPORT_LOCALES.join(', ')} (de, fr, es, it, nl: ";" and a decimal comma; en: "," and a decimal point), or --report-delimiter alone`,
  );
}

/** How one CSV input was read. */
export interface CsvRead extends CsvStyle {
  file: string;
}

/** Where a report's style came from, for the line that says how it was written. */
export type StyleSource =
  | { kind: 'input'; file: string }
  | { kind: 'run'; runId: string }
  | { kind: 'locale' }
  | { kind: 'default' };

/**
 * The style of a run's --report and --failed-out: `--report-locale`, else the style every CSV
 * input was read with (when they differ, or none is a CSV: "," and a point); then
 * `--report-delimiter` sets the delimiter alone.
 */
export function reportStyleOf(
  flags: { locale?: CsvStyle; delimiter?: string },
  reads: readonly CsvRead[],
): { style: CsvStyle; source: StyleSource } {
  const first = reads[0];
  const agreed =
    first !== undefined &&
    reads.every((r) => r.delimiter === first.delimiter && r.decimalComma === first.decimalComma);
  const base: { style: CsvStyle; source: StyleSource } = flags.locale
    ? { style: flags.locale, source: { kind: 'locale' } }
    : agreed && (first.delimiter !== ',' || first.decimalComma)
      ? { style: styleOf(first), source: { kind: 'input', file: first.file } }
      : { style: PLAIN_STYLE, source: { kind: 'default' } };
  if (flags.delimiter === undefined) return base;
  return { ...base, style: { ...base.style, delimiter: flags.delimiter } };
}

/** The style alone, without the file it came from. */
function styleOf(s: CsvStyle): CsvStyle {
  return { delimiter: s.delimiter, decimalComma: s.decimalComma };
}

/** An amount's plain decimal text written in `style`: "1234.56" -> "1234,56" with a decimal comma. */
export function amountCell(text: string, style: CsvStyle): string {
  return style.decimalComma ? text.replace('.', ',') : text;
}

/** What a header cell of amounts says when they are written with a decimal comma. */
export const DECIMAL_COMMA_MARK = 'decimal comma';

/** The header cell of an amounts column: `amount (decimal comma)`, so a reader knows the mark. */
export function amountHeader(name: string, style: CsvStyle): string {
  return style.decimalComma ? `${name} (${DECIMAL_COMMA_MARK})` : name;
}

/**
 * How a file was written, for the line that names it: `";"-separated, decimal comma,
 * UTF-8 with a byte-order mark, as Auszahlungen.csv was read`.
 */
export function styleText(style: CsvStyle, source: StyleSource, encoding?: string): string {
  const delimiter = style.delimiter === '\t' ? 'tab' : `"${style.delimiter}"`;
  const mark = style.decimalComma ? 'decimal comma' : 'decimal point';
  const bytes = encoding === 'utf8' ? 'UTF-8' : 'UTF-8 with a byte-order mark';
  const why = {
    input: `, as ${source.kind === 'input' ? source.file : ''} was read`,
    run: `, as the files of run ${source.kind === 'run' ? source.runId : ''} were read`,
    locale: ', as --report-locale says',
    default: '',
  }[source.kind];
  return `${delimiter}-separated, ${mark}, ${bytes}${why}`;
}

/** The style as the history keeps it with a run (runs.csv_style), for `runs show --failed-out`. */
export function storedStyle(style: CsvStyle): string {
  return JSON.stringify({
    delimiter: style.delimiter,
    decimal_mark: style.decimalComma ? ',' : '.',
  });
}

/**
 * The style of a retry file written from the history (`runs show --failed-out`): --report-locale,
 * else the run's own (its CSV input's, kept with it), else "," and a point.
 */
export function historyStyleOf(
  locale: CsvStyle | undefined,
  run: { run_id: string; csv_style: string | null },
): { style: CsvStyle; source: StyleSource } {
  if (locale) return { style: locale, source: { kind: 'locale' } };
  const kept = styleFromHistory(run.csv_style);
  if (kept && (kept.delimiter !== ',' || kept.decimalComma)) {
    return { style: kept, source: { kind: 'run', runId: run.run_id } };
  }
  return { style: PLAIN_STYLE, source: { kind: 'default' } };
}

/** A run's style from the history; undefined when none was kept or it cannot be read. */
export function styleFromHistory(text: string | null | undefined): CsvStyle | undefined {
  if (!text) return undefined;
  try {
    const v = JSON.parse(text) as { delimiter?: unknown; decimal_mark?: unknown };
    if (![',', ';', '\t'].includes(v.delimiter as string)) return undefined;
    return { delimiter: v.delimiter as string, decimalComma: v.decimal_mark === ',' };
  } catch {
    return undefined;
  }
}
