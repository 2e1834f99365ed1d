import { quoteValue } from '../errors.js';
import { foldedReference } from './reference.js';

/** Where a row is; a valid payout is one (its location text is made only when read). */
export interface RowPlace {
  readonly file: string;
  readonly location: string;
}

/** One row's reference, where it is, and its place in the run's order of rows. */
export interface Sighting {
  ref: string;
  file: string;
  location: string;
  order: number;
}

/** A sighting of `ref` at `place`, its location text made now. */
function sighting(ref: string, place: RowPlace, order: number): Sighting {
  return { ref, file: place.file, location: place.location, order };
}

/** Where `earlier` is, as seen from a message about a row of `file`. */
function placeOf(earlier: Sighting, file: string): string {
  return earlier.file === file ? earlier.location : `${earlier.file} ${earlier.location}`;
}

/** The warning about two references that differ only in what cannot be seen. */
function lookalikeWarning(a: Sighting, b: Sighting): string {
  const [earlier, later] = a.order < b.order ? [a, b] : [b, a];
  return (
    `${later.file} ${later.location}: reference_id ${quoteValue(later.ref)} looks the same as ` +
    `${placeOf(earlier, later.file)}'s ${quoteValue(earlier.ref)} (they differ only by invisible ` +
    'characters or Unicode normalisation); check that these are two different payouts'
  );
}

/**
 * Finds references of a run that differ only by invisible characters or Unicode normalisation
 * (equal once folded), to warn about them. Of two such references at least one is not its own
 * folded form, so only those are kept, by folded form: plain ASCII references, almost every
 * row, cost a pattern test. One that equals a kept folded form is found after pass 1, by looking
 * each kept folded form up among the run's references (see confirm).
 */
export class LookalikeReferences {
  /** The first reference seen that is not its own folded form, by folded form. */
  private readonly unfolded = new Map<string, Sighting>();
  private order = 0;

  constructor(private readonly warn: (message: string) => void) {}

  /** Pass 1: notes one row's reference, warning when it folds like a different earlier one. */
  see(ref: string, place: RowPlace): void {
    const order = this.order++;
    const folded = foldedReference(ref);
    if (folded === undefined || folded === ref) return;
    const first = this.unfolded.get(folded);
    if (first === undefined) this.unfolded.set(folded, sighting(ref, place, order));
    else if (first.ref !== ref) this.warn(lookalikeWarning(first, sighting(ref, place, order)));
  }

  /**
   * After pass 1: warns about each row whose reference is exactly a kept folded form (`find`
   * tells where a reference is used, and its place in pass 1's order), in that order.
   */
  confirm(find: (ref: string) => Omit<Sighting, 'ref'> | undefined): void {
    const found: Array<[Sighting, Sighting]> = [];
    for (const [folded, first] of this.unfolded) {
      const exact = find(folded);
      if (exact) found.push([first, { ...exact, ref: folded }]);
    }
    found.sort(([, a], [, b]) => a.order - b.order);
    for (const [first, exact] of found) this.warn(lookalikeWarning(first, exact));
  }
}
