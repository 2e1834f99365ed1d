/**
 * Characters a terminal may act on instead of showing: C0 controls (ESC, BEL, line breaks,
 * tab, NUL, ...), DEL, C1 controls, and the bidi embeddings, overrides and isolates that can
 * make text read in another order than it is written.
 */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const CONTROLS = new RegExp(CONTROL.source, 'g');
/** A colour sequence (SGR, as chalk and cli-table3 write them) or a control character. */
const COLOUR_OR_CONTROL = new RegExp(`\\u001b\\[[0-9;]*m|${CONTROL.source}`, 'g');

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** One control character as visible text: "\n", "\x1b", "\u202e". */
function escapeControl(ch: string): string {
  const named = NAMED[ch];
  if (named) return named;
  const code = ch.charCodeAt(0);
  return code < 0x100
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * Text from outside (a reference, a service message, a file name) as it may be shown on a
 * terminal: every control character escaped, so it can neither drive the terminal nor break
 * a line. Backslashes are left alone; --json carries the exact text.
 */
export function displayText(text: string): string {
  return CONTROL.test(text) ? text.replace(CONTROLS, escapeControl) : text;
}

/** What terminalText leaves as it is. */
export interface OwnText {
  /** Colour sequences: true where we write colours (a terminal), false elsewhere. */
  colours: boolean;
  /** Line breaks: true for whole messages, false for a table cell. */
  lineBreaks: boolean;
}

/**
 * The last guard before a terminal or pipe: escapes every control character except our own
 * line breaks and colour sequences, for text that displayText missed.
 */
export function terminalText(text: string, own: OwnText): string {
  if (!CONTROL.test(text)) return text;
  return text.replace(COLOUR_OR_CONTROL, (m) => {
    if (m.length > 1) return own.colours ? m : `\\x1b${m.slice(1)}`;
    if (m === '\n' && own.lineBreaks) return m;
    return escapeControl(m);
  });
}
