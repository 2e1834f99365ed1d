/**
 * One pass over a file that needs flags: a CSV export refused for its encoding stops at the
 * first bad byte, so its headers and decimal commas would only be found on later tries. The
 * file is read again with each flag its problems name (a --map from its own header's names),
 * until no new one is named, and the run then says once which flags it needs, with the
 * command line to run. Nothing is read with a guessed flag: each is a guess about money.
 */
import type { Problem } from '../errors.js';
import { mapWord } from './header-names.js';
import { readPayouts } from './index.js';
import { ProblemList } from './problems.js';
import {
  type InputSource,
  type IntakeOptions,
  type IntakeSink,
  PAYOUT_FIELDS,
  type PayoutField,
} from './types.js';

/** Flags a file's problems name, which a reader can try. */
export interface Needs {
  encoding?: 'windows-1252';
  /** The file read as Windows-1252 is a CSV, as Excel on Windows saves one ("CSV"). */
  excelCsv?: boolean;
  decimalComma?: boolean;
  /** Header names for the fields, from the header's own (known) names. */
  map?: Partial<Record<PayoutField, string>>;
}

/** Rounds of reading again: each adds at least one flag, and there are three to add. */
const MAX_ROUNDS = 3;

/** The flags named by problems that the options do not already hold. */
function namedFlags(problems: readonly Problem[], opts: IntakeOptions): Needs {
  const needs: Needs = {};
  for (const p of problems) {
    if (opts.encoding === undefined && p.message.includes('pass --encoding windows-1252')) {
      needs.encoding = 'windows-1252';
      needs.excelCsv = p.message.includes('(Excel "CSV" on Windows)');
    }
    if (!opts.decimalComma && p.message.includes('pass --decimal-comma')) needs.decimalComma = true;
    if (p.map !== undefined && needs.map === undefined)
      needs.map = p.map as Partial<Record<PayoutField, string>>;
  }
  return needs;
}

/** The flags of `needs` as they are typed. */
export function flagsOf(needs: Needs): string[] {
  const flags: string[] = [];
  if (needs.encoding) flags.push(`--encoding ${needs.encoding}`);
  if (needs.decimalComma) flags.push('--decimal-comma');
  if (needs.map) flags.push(`--map ${mapWord(needs.map)}`);
  return flags;
}

/** Why a file needs its flags, in words. */
export function needsText(needs: Needs): string {
  const why: string[] = [];
  if (needs.encoding) {
    why.push(`is Windows-1252 text${needs.excelCsv ? ' (Excel "CSV" on Windows)' : ''}, not UTF-8`);
  }
  if (needs.decimalComma) why.push('writes amounts with a decimal comma (1.234,56)');
  if (needs.map) why.push(`names its columns ${columnsText(needs.map)}`);
  return `${why.slice(0, -1).join(', ')}${why.length > 1 ? ' and ' : ''}${why.at(-1) ?? ''}`;
}

/** "Referenz (reference_id), Betrag (amount)": what a --map reads from where, to check. */
function columnsText(map: Partial<Record<PayoutField, string>>): string {
  return PAYOUT_FIELDS.filter((f) => map[f] !== undefined)
    .map((f) => `${JSON.stringify(map[f])} (${f})`)
    .join(', ');
}

/** The run's checks across rows (a repeated reference), made afresh for each reading. */
export type RowChecks = (add: (p: Problem) => void) => Pick<IntakeSink, 'payout' | 'refused'>;

/**
 * Reads a CSV source again with every flag its problems name (and those the next reading
 * names). Undefined when they name none; else the flags, and the problems the file still has
 * with them (shown after the flags, since they need fixing too), `rows`' among them.
 */
export async function diagnose(
  source: InputSource,
  opts: IntakeOptions,
  problems: readonly Problem[],
  rows?: RowChecks,
): Promise<{ needs: Needs; problems: ProblemList } | undefined> {
  let needs = namedFlags(problems, opts);
  if (flagsOf(needs).length === 0) return undefined;
  let found = new ProblemList();
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const list = new ProblemList();
    found = list;
    const tried: IntakeOptions = { ...opts, ...needs };
    const checks = rows?.((p) => list.add(p));
    await readPayouts(source, tried, {
      payout: (p) => checks?.payout(p),
      refused: (ref, file, location) => checks?.refused?.(ref, file, location),
      warning() {},
      problem: (p) => list.add(p),
    });
    const more = namedFlags(found.shown, tried);
    if (flagsOf(more).length === 0) break;
    needs = { ...needs, ...more };
  }
  return { needs, problems: found };
}
