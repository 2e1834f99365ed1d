import { quoteValue, UsageError } from '../../errors.js';
import { checkReference } from './reference-check.js';
import type { ReferenceFileContext } from './reference-file.js';

/**
 * A reference as typed, without the white space a paste leaves at its ends (a spreadsheet's
 * trailing space, tab or line break), told in one line through `note`. Control characters
 * other than white space stay, and are refused by checkReference.
 */
export function trimPasted(ref: string, note?: (message: string) => void): string {
  const trimmed = ref.trim();
  if (trimmed === ref || trimmed === '') return ref;
  note?.(
    `reference_id ${quoteValue(ref)} has white space at its ends, as a paste leaves it: looked up as ${quoteValue(trimmed)}`,
  );
  return trimmed;
}

/**
 * Combines references from arguments and files: checked, de-duplicated, in order. White space
 * at an argument's ends is trimmed with a note (trimPasted); a file's values come trimmed, as
 * send trims a cell.
 */
export function combineReferences(...lists: string[][]): string[] {
  return combineNoting(lists);
}

/** combineReferences, telling each trimmed reference through `note`. */
function combineNoting(lists: string[][], note?: (message: string) => void): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const list of lists) {
    for (const typed of list) {
      const ref = trimPasted(typed, note);
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
  ctx: ReferenceFileContext & { note?: (message: string) => void },
): Promise<string[]> {
  if (files.filter((f) => f === '-').length > 1) {
    throw new UsageError('--from - (standard input) can be given only once');
  }
  const fromFiles: string[][] = [];
  if (files.length > 0) {
    const { readReferenceFile } = await import('./reference-file.js');
    for (const path of files) fromFiles.push(await readReferenceFile(path, ctx));
  }
  const references = combineNoting([positional, ...fromFiles], ctx.note);
  if (references.length === 0) {
    throw new UsageError(
      files.length > 0
        ? `no references found in ${files.join(', ')}`
        : 'give at least one reference_id, or --from FILE',
    );
  }
  return references;
}
