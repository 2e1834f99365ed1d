/**
 * Characters a payout's text fields must not hold, found and named for a message: control
 * characters (line breaks among them) in every field, and in the recipient and description
 * also the invisible characters that change how text shows, so that the confirmation, the
 * report or a statement could show another recipient than the one paid.
 */

/** A character a field must not hold. */
export interface HiddenCharacter {
  /** "U+202E RIGHT-TO-LEFT OVERRIDE", or "U+0001" for a control without a common name. */
  name: string;
  /** Its 1-based position in the value, in characters (code points). */
  at: number;
  kind: 'control' | 'format' | 'surrogate';
}

// C0 controls, DEL and the C1 controls.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// Line and paragraph separators, bidirectional marks, embeddings, overrides and isolates, and
// the invisible format characters that are no part of any script's spelling (ZWNJ and ZWJ are).
const FORMAT =
  /[\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]/;
// Paired surrogates are one code point under the u flag, so this matches only a lone half.
const LONE_SURROGATE = /\p{Cs}/u;
// One test of a whole value, so an ordinary value costs a single pattern match.
const ANY_HIDDEN =
  /[\u0000-\u001f\u007f-\u009f\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]|\p{Cs}/u;

const NAMES = new Map<number, string>([
  [0x00, 'NULL'],
  [0x07, 'BELL'],
  [0x08, 'BACKSPACE'],
  [0x09, 'CHARACTER TABULATION'],
  [0x0a, 'LINE FEED'],
  [0x0b, 'LINE TABULATION'],
  [0x0c, 'FORM FEED'],
  [0x0d, 'CARRIAGE RETURN'],
  [0x1b, 'ESCAPE'],
  [0x7f, 'DELETE'],
  [0x85, 'NEXT LINE'],
  [0x9b, 'CONTROL SEQUENCE INTRODUCER'],
  [0x061c, 'ARABIC LETTER MARK'],
  [0x180e, 'MONGOLIAN VOWEL SEPARATOR'],
  [0x200b, 'ZERO WIDTH SPACE'],
  [0x200e, 'LEFT-TO-RIGHT MARK'],
  [0x200f, 'RIGHT-TO-LEFT MARK'],
  [0x2028, 'LINE SEPARATOR'],
  [0x2029, 'PARAGRAPH SEPARATOR'],
  [0x202a, 'LEFT-TO-RIGHT EMBEDDING'],
  [0x202b, 'RIGHT-TO-LEFT EMBEDDING'],
  [0x202c, 'POP DIRECTIONAL FORMATTING'],
  [0x202d, 'LEFT-TO-RIGHT OVERRIDE'],
  [0x202e, 'RIGHT-TO-LEFT OVERRIDE'],
  [0x2060, 'WORD JOINER'],
  [0x2061, 'FUNCTION APPLICATION'],
  [0x2062, 'INVISIBLE TIMES'],
  [0x2063, 'INVISIBLE SEPARATOR'],
  [0x2064, 'INVISIBLE PLUS'],
  [0x2066, 'LEFT-TO-RIGHT ISOLATE'],
  [0x2067, 'RIGHT-TO-LEFT ISOLATE'],
  [0x2068, 'FIRST STRONG ISOLATE'],
  [0x2069, 'POP DIRECTIONAL ISOLATE'],
  [0x206a, 'INHIBIT SYMMETRIC SWAPPING'],
  [0x206b, 'ACTIVATE SYMMETRIC SWAPPING'],
  [0x206c, 'INHIBIT ARABIC FORM SHAPING'],
  [0x206d, 'ACTIVATE ARABIC FORM SHAPING'],
  [0x206e, 'NATIONAL DIGIT SHAPES'],
  [0x206f, 'NOMINAL DIGIT SHAPES'],
  [0xfeff, 'ZERO WIDTH NO-BREAK SPACE'],
  [0xfff9, 'INTERLINEAR ANNOTATION ANCHOR'],
  [0xfffa, 'INTERLINEAR ANNOTATION SEPARATOR'],
  [0xfffb, 'INTERLINEAR ANNOTATION TERMINATOR'],
]);

/** "U+XXXX NAME" for a code point. */
export function characterName(code: number): string {
  const hex = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  const name = NAMES.get(code);
  return name === undefined ? hex : `${hex} ${name}`;
}

/**
 * The first character of `text` a field must not hold: only control characters and lone
 * surrogates (`controls`, what a reference is refused for), or those and the invisible
 * format characters (`all`, for the recipient and the description).
 */
export function firstHiddenCharacter(
  text: string,
  which: 'controls' | 'all',
): HiddenCharacter | undefined {
  if (!ANY_HIDDEN.test(text)) return undefined;
  let at = 0;
  for (const ch of text) {
    at += 1;
    const code = ch.codePointAt(0)!;
    if (CONTROL.test(ch)) return { name: characterName(code), at, kind: 'control' };
    if (LONE_SURROGATE.test(ch)) return { name: characterName(code), at, kind: 'surrogate' };
    if (which === 'all' && FORMAT.test(ch))
      return { name: characterName(code), at, kind: 'format' };
  }
  return undefined;
}
