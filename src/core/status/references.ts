import { UsageError } from '../../errors.js';
import type { ReferenceFileContext } from './reference-file.js';

/** Checks a reference can be looked up: "." and ".." cannot be a path segment of a URL. */
export function checkReference(ref: string): void {
  if (ref === '.' || ref === '..') {
    throw new UsageError(`reference_id ${JSON.stringify(ref)} cannot be looked up over HTTP`);
  }
  if (/[\u0000-\u001f\u007f]/.test(ref)) {
    throw new UsageError(
      `reference_id ${JSON.stringify(ref)} holds a control character: check the input`,
    );
  }
}

/** Combines references from arguments and files: trimmed, checked, de-duplicated, in order. */
export function combineReferences(...lists: string[][]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const list of lists) {
    for (const raw of list) {
      const ref = raw.trim();
      if (ref === '' || seen.has(ref)) continue;
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
