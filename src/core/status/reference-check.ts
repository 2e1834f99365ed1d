import { formatProblem, quoteValue, UsageError } from '../../errors.js';
import { referenceProblem } from '../../input/reference.js';

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
