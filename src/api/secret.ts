import { inspect } from 'node:util';
import { CredentialsError } from '../errors.js';

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

/**
 * Why `value` cannot be sent as an HTTP header value, or undefined when it can: RFC 9110's
 * field-value limited to visible ASCII, with spaces and tabs inside only, and not empty.
 */
export function headerValueProblem(value: string): string | undefined {
  if (value === '') return 'is empty';
  if (/[\r\n]$/.test(value)) {
    return "ends with a line break (did `echo` add one? `printf '%s'` adds none)";
  }
  if (/^[ \t]/.test(value)) return 'starts with a space or tab';
  if (/[ \t]$/.test(value)) return 'ends with a space or tab';
  const bad = /[^\x21-\x7e \t]/.exec(value);
  if (bad === null) return undefined;
  if (bad[0] === '\n' || bad[0] === '\r') return 'holds a line break';
  const code = value.codePointAt(bad.index) ?? 0;
  const named = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  const kind = code < 0x20 || code === 0x7f ? 'the control character' : 'the character';
  return `holds ${kind} ${named}, which cannot be sent in an HTTP header`;
}

/** A credential to check before it goes into its header. */
export interface CredentialCheck {
  name: 'Client-Id' | 'Client-Secret';
  value: string;
  /** Where the value came from: "PAYOUTS_CLIENT_SECRET", "profile "x" in FILE", "standard input". */
  from: string;
  /** How to correct it, appended after a colon. */
  fix?: string;
}

/**
 * Throws CredentialsError when a Client-Id or Client-Secret cannot be sent as an HTTP header:
 * undici would refuse every request with it. The message names the value, where it came from
 * and what is wrong; it shows the Client-Id but never the secret.
 */
export function checkCredential(c: CredentialCheck): void {
  const problem = headerValueProblem(c.value);
  if (problem === undefined) return;
  const shown = c.name === 'Client-Id' ? ` ${JSON.stringify(c.value)}` : '';
  throw new CredentialsError(
    `the ${c.name}${shown} from ${c.from} ${problem}${c.fix ? `: ${c.fix}` : ''}`,
  );
}
