/**
 * Characters a terminal may act on instead of showing, or that do not show: C0 controls (ESC,
 * BEL, line breaks, tab, NUL, ...), DEL, C1 controls, the bidi marks, embeddings, overrides
 * and isolates that can make text read in another order than it is written, and the
 * invisible ones (soft hyphen, zero-width, line and paragraph separators, BOM) that make two
 * different references look the same; tag characters; and half surrogate pairs.
 */
const CONTROL =
  /[\u0000-\u001f\u007f-\u009f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]|\udb40[\udc00-\udc7f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const CONTROLS = new RegExp(CONTROL.source, 'g');
/** A colour sequence (SGR, as chalk writes them) or a control character. */
const COLOUR_OR_CONTROL = new RegExp(`\\u001b\\[[0-9;]*m|${CONTROL.source}`, 'g');

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** One control character (or a tag character's surrogate pair) as visible text: "\n", "\x1b". */
function escapeControl(ch: string): string {
  const named = NAMED[ch];
  if (named) return named;
  let out = '';
  for (let i = 0; i < ch.length; i++) {
    const code = ch.charCodeAt(i);
    out +=
      code < 0x100
        ? `\\x${code.toString(16).padStart(2, '0')}`
        : `\\u${code.toString(16).padStart(4, '0')}`;
  }
  return out;
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
  /** Tabs: true for printed results (a table on a pipe is tab-separated), else escaped. */
  tabs?: boolean;
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
    if (m === '\t' && own.tabs) return m;
    return escapeControl(m);
  });
}

/** A word as a POSIX shell reads it back: bare when plain, else in single quotes. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * A count with its noun, singular for 1 and plural otherwise: "1 payout", "2 payouts",
 * "0 runs"; `plural` for the nouns that do not take an "s" ("1 entry", "2 entries").
 */
export function count(n: number | bigint, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 || n === 1n ? noun : plural}`;
}

/** "3 days ago", "5 minutes ago", "just now": how long before `now` (ms) an ISO time was. */
export function agoText(at: string, now: number): string {
  const ms = now - Date.parse(at);
  if (Number.isNaN(ms)) return `at ${at}`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return 'just now';
  if (minutes < 120) return `${count(minutes, 'minute')} ago`;
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? `${hours} hours ago` : `${Math.floor(hours / 24)} days ago`;
}

/**
 * Help text wrapped to `width` columns at spaces, never inside a word: a longer line goes on
 * under the column its text starts in (after the indent and any run of two spaces, as
 * commander lays out options). Example lines (`$ …`) are kept whole, to copy.
 */
export function wrapText(text: string, width: number): string {
  return reflow(text)
    .split('\n')
    .map((line) => (line.length <= width || /^\s*\$ /.test(line) ? line : wrapLine(line, width)))
    .join('\n');
}

/** One long line wrapped: see wrapText. */
function wrapLine(line: string, width: number): string {
  const hang = /^(\s*\S.*?\s{2,})\S/.exec(line)?.[1]?.length ?? /^\s*/.exec(line)![0].length;
  const indent = ' '.repeat(hang < width / 2 ? hang : 0);
  const out: string[] = [];
  let current = '';
  for (const word of line.slice(0).split(/(?<=\S) (?=\S)/)) {
    if (current !== '' && current.length + 1 + word.trimStart().length > width) {
      out.push(current);
      current = indent + word.trimStart();
    } else current = current === '' ? word : `${current} ${word}`;
  }
  out.push(current);
  return out.join('\n');
}

/** Joins the lines of each unindented paragraph of prose, so it wraps to any width. */
function reflow(text: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  for (const line of lines) {
    const prev = out.at(-1);
    const prose = (l: string) => l !== '' && !/^\s|^\$ |^- /.test(l);
    if (prev !== undefined && prose(prev) && prose(line) && !/:$/.test(prev)) {
      out[out.length - 1] = `${prev} ${line}`;
    } else out.push(line);
  }
  return out.join('\n');
}
