/** Collects the problems of a run, keeping the first few for display and counting them all. */
import { InputError, type Problem } from '../errors.js';

/** The problems of a run: the first `limit` kept to show, every one counted. */
export class ProblemList {
  private readonly kept: Problem[] = [];
  private count = 0;

  constructor(private readonly limit = 50) {}

  /** Records one problem. */
  add(p: Problem): void {
    this.count += 1;
    if (this.kept.length < this.limit) this.kept.push(p);
  }

  /** Records one problem ahead of those recorded so far. */
  addFirst(p: Problem): void {
    this.count += 1;
    this.kept.unshift(p);
    if (this.kept.length > this.limit) this.kept.pop();
  }

  /** Records every problem of another list: those it shows, and its count of the rest. */
  absorb(other: ProblemList): void {
    for (const p of other.shown) this.add(p);
    this.count += other.total - other.shown.length;
  }

  /** How many problems were added, shown or not. */
  get total(): number {
    return this.count;
  }

  /** The problems to show, in the order they were found. */
  get shown(): Problem[] {
    return this.kept;
  }

  /** The error that stops the run, carrying the shown problems and the total. */
  toError(): InputError {
    return new InputError([...this.kept], this.count);
  }
}
