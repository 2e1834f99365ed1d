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

  /**
   * The secret masked for `config show`: always 12 characters, so its length does not show;
   * the last 4 only of a secret of 16 or more, of which they give little away.
   */
  masked(): string {
    const v = this.#value;
    return v.length >= 16 ? `********${v.slice(-4)}` : '************';
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

/** One hexadecimal digit in either case, as a pattern. */
function hexDigit(d: string): string {
  return /[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d;
}

/** A number as `width` hex digits, each in either case. */
function hexPattern(n: number, width: number): string {
  return [...n.toString(16).padStart(width, '0')].map(hexDigit).join('');
}

/** The short JSON escapes: the letter after the backslash. */
const SHORT_ESCAPES: Record<string, string> = {
  '"': '"',
  '\\': '\\\\',
  '/': '/',
  '\b': 'b',
  '\f': 'f',
  '\n': 'n',
  '\r': 'r',
  '\t': 't',
};

/**
 * The ways one character can be written in an answer: as is; as a JSON escape (\uXXXX in
 * either case, a surrogate pair beyond U+FFFF, \/ and the other short ones), behind any
 * number of backslashes, since a JSON text quoted in a JSON string escapes them again; or
 * percent-encoded (a Location's query).
 */
function charPattern(ch: string): string {
  const cp = ch.codePointAt(0) as number;
  const esc = '\\\\+';
  const alts = [ch.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&')];
  if (cp > 0xffff) {
    const hi = 0xd800 + ((cp - 0x10000) >> 10);
    const lo = 0xdc00 + ((cp - 0x10000) & 0x3ff);
    alts.push(`${esc}u${hexPattern(hi, 4)}${esc}u${hexPattern(lo, 4)}`);
  } else {
    alts.push(`${esc}u${hexPattern(cp, 4)}`);
  }
  const short = SHORT_ESCAPES[ch];
  if (short !== undefined) alts.push(`${esc}${short}`);
  const bytes = [...Buffer.from(ch, 'utf8')].map((b) => `%${hexPattern(b, 2)}`).join('');
  alts.push(bytes);
  if (ch === ' ') alts.push('\\+');
  return `(?:${alts.join('|')})`;
}

/**
 * Removes the Client-Secret from what a service answered, however it is written. Raw text
 * (a body as received, a header) is searched for every form a JSON or URL encoder can give
 * it; a decoded JSON value has every string, keys included, searched the same way, so a
 * form no pattern foresaw is caught once decoded.
 */
export class Redactor {
  readonly #pattern: RegExp | undefined;

  constructor(secret: string) {
    this.#pattern =
      secret === '' ? undefined : new RegExp([...secret].map(charPattern).join(''), 'g');
  }

  /** `text` with every form of the secret replaced by "[redacted]". */
  text(text: string): string {
    if (this.#pattern === undefined) return text;
    this.#pattern.lastIndex = 0;
    return text.replace(this.#pattern, REDACTED);
  }

  /** A decoded JSON value with the secret removed from every string in it, keys included. */
  value(value: unknown): unknown {
    if (typeof value === 'string') return this.text(value);
    if (Array.isArray(value)) return value.map((v) => this.value(v));
    if (typeof value !== 'object' || value === null) return value;
    // fromEntries defines each key as data, so a "__proto__" key stays a key.
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [this.text(k), this.value(v)]));
  }
}
