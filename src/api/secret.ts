import { inspect } from 'node:util';

const REDACTED = '[redacted]';

/**
 * Holds the Client-Secret. Every way of turning it into text (String, JSON, util.inspect,
 * template literals) yields "[redacted]"; only reveal() gives the value, for the header.
 */
export class Secret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  /** The secret itself: only for the Client-Secret header. */
  reveal(): string {
    return this.#value;
  }

  /** The secret masked to its last 4 characters, for `config show`. */
  masked(): string {
    const v = this.#value;
    return v.length <= 4
      ? '*'.repeat(v.length)
      : `${'*'.repeat(Math.min(8, v.length - 4))}${v.slice(-4)}`;
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return REDACTED;
  }
}
