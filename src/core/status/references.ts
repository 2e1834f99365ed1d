import { formatProblem, quoteValue, UsageError } from '../../errors.js';
import { referenceProblem } from '../../input/reference.js';
import type { ReferenceFileContext } from './reference-file.js';

/** Where a reference was read from, when it came from a --from file. */
export interface ReferenceOrigin {
  file: string;
  line: number;
}

/**
 * Refuses a reference that cannot be looked up, for the same reasons `payouts send` refuses
 * it (referenceProblem), naming the file and line it came from when it came from one.
 */
export function checkReference(ref: string, origin?: ReferenceOrigin): void {
  const problem = referenceProblem(ref);
  if (problem === undefined) return;
  // The same words as intake's problem for the row: the reason, then the fix.
  const message = `${problem.reason}: ${problem.fix}`;
  if (origin === undefined) throw new UsageError(`reference_id ${quoteValue(ref)}: ${message}`);
  throw new UsageError(
    formatProblem({
      file: origin.file,
      location: `line ${origin.line}`,
      field: 'reference_id',
      value: ref,
      message,
    }),
  );
}

/**
 * Combines references from arguments and files: checked, de-duplicated, in order. An argument
 * is taken as typed, never trimmed: `' A-1'` is refused, as send refuses it, rather than
 * looked up as another reference. A file's values come trimmed, as send trims a cell.
 */
export function combineReferences(...lists: string[][]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const list of lists) {
    for (const ref of list) {
      if (seen.has(ref)) continue;
      checkReference(ref);
      seen.add(ref);
      out.push(ref);
    }
  }
  return out;
}

/** Gathers the references of a run from arguments and --from files, in order, without repeats. */
export async function gatherReferences(
  positional: string[],
  files: string[],
  ctx: ReferenceFileContext,
): Promise<string[]> {
  if (files.filter((f) => f === '-').length > 1) {
    throw new UsageError('--from - (standard input) can be given only once');
  }
  const fromFiles: string[][] = [];
  if (files.length > 0) {
    const { readReferenceFile } = await import('./reference-file.js');
    for (const path of files) fromFiles.push(await readReferenceFile(path, ctx));
  }
  const references = combineReferences(positional, ...fromFiles);
  if (references.length === 0) {
    throw new UsageError(
      files.length > 0
        ? `no references found in ${files.join(', ')}`
        : 'give at least one reference_id, or --from FILE',
    );
  }
  return references;
}
