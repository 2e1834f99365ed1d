/**
 * One pass over a file that needs flags: a CSV export refused for its encoding stops at the
 * first bad byte, so its decimal commas would only be found on the next try. The file is read
 * again with each flag its problems name, until no new one is named, and the run then says
 * once which flags it needs, with the command line to run.
 */
import type { Problem } from '../errors.js';
import { readPayouts } from './index.js';
import { ProblemList } from './problems.js';
import type { InputSource, IntakeOptions } from './types.js';

/** Flags a file's problems name, which a reader can try. */
export interface Needs {
  encoding?: 'windows-1252';
  decimalComma?: boolean;
}

/** Rounds of reading again: each adds at least one flag, and there are two to add. */
const MAX_ROUNDS = 2;

/** The flags named by problems that the options do not already hold. */
function namedFlags(problems: readonly Problem[], opts: IntakeOptions): Needs {
  const needs: Needs = {};
  for (const p of problems) {
    if (opts.encoding === undefined && p.message.includes('pass --encoding windows-1252'))
      needs.encoding = 'windows-1252';
    if (!opts.decimalComma && p.message.includes('pass --decimal-comma')) needs.decimalComma = true;
  }
  return needs;
}

/** The flags of `needs` as they are typed. */
export function flagsOf(needs: Needs): string[] {
  const flags: string[] = [];
  if (needs.encoding) flags.push(`--encoding ${needs.encoding}`);
  if (needs.decimalComma) flags.push('--decimal-comma');
  return flags;
}

/** Why a file needs its flags, in words. */
export function needsText(needs: Needs): string {
  const why: string[] = [];
  if (needs.encoding) why.push('is Windows-1252 text (Excel "CSV" on Windows), not UTF-8');
  if (needs.decimalComma) why.push('writes amounts with a decimal comma (1.234,56)');
  return why.join(' and ');
}

/**
 * Reads a CSV source again with every flag its problems name (and those the next reading
 * names). Undefined when they name none; else the flags, and the problems the file still has
 * with them (shown after the flags, since they need fixing too).
 */
export async function diagnose(
  source: InputSource,
  opts: IntakeOptions,
  problems: readonly Problem[],
): Promise<{ needs: Needs; problems: ProblemList } | undefined> {
  let needs = namedFlags(problems, opts);
  if (flagsOf(needs).length === 0) return undefined;
  let found = new ProblemList();
  for (let round = 0; round < MAX_ROUNDS; round++) {
    found = new ProblemList();
    const tried: IntakeOptions = { ...opts, ...needs };
    await readPayouts(source, tried, {
      payout() {},
      refused() {},
      warning() {},
      problem: (p) => found.add(p),
    });
    const more = namedFlags(found.shown, tried);
    if (flagsOf(more).length === 0) break;
    needs = { ...needs, ...more };
  }
  return { needs, problems: found };
}
