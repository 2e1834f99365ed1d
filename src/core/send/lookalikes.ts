import { quoteValue } from '../../errors.js';
import { foldedReference } from '../../input/reference.js';

/** Where a row is; a valid payout is one (its location text is made only when read). */
export interface RowPlace {
  readonly file: string;
  readonly location: string;
}

/** One row's reference, where it is, and its place in the run's order of rows. */
interface Sighting {
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
 * row, cost a pattern test. One that equals a kept folded form is found after pass 1, through
 * the run's sealed fingerprints and a second look at the rows (see suspects and recheck).
 */
export class LookalikeReferences {
  /** The first reference seen that is not its own folded form, by folded form. */
  private readonly unfolded = new Map<string, Sighting>();
  private order = 0;
  /** During the second look: folded forms some row may spell exactly, not yet met. */
  private pending = new Set<string>();

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
   * After pass 1: whether a row may spell a kept folded form exactly, by the run's fingerprints
   * (`has`, of every reference); if so, the rows are to be passed to recheck in pass 1's order.
   */
  suspects(has: (ref: string) => boolean): boolean {
    this.pending = new Set([...this.unfolded.keys()].filter(has));
    this.order = 0;
    return this.pending.size > 0;
  }

  /** The second look: warns about a row whose reference is exactly a kept folded form. */
  recheck(ref: string, place: RowPlace): void {
    const order = this.order++;
    if (!this.pending.has(ref)) return;
    this.pending.delete(ref);
    this.warn(lookalikeWarning(this.unfolded.get(ref)!, sighting(ref, place, order)));
  }
}
