import * as XLSX from '@e965/xlsx';
import { describe, expect, it } from 'vitest';
import { characterName, firstHiddenCharacter } from '../../../src/input/characters.js';
import { referenceProblem } from '../../../src/input/reference.js';
import { HEADER, intake, intakeCsv, memorySource } from './helpers.js';

// Issue 31, item 4: a recipient or description that shows otherwise than it is sent (a line
// break, a control character, a bidirectional override or isolate, an invisible mark) is
// refused at intake, in every format, naming the file, line, field and character.

const BIDI_AND_INVISIBLE = [
  0x061c, 0x180e, 0x200b, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
  0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0x2066, 0x2067, 0x2068, 0x2069, 0x206a, 0x206f, 0xfeff,
  0xfff9, 0xfffb,
];

describe('firstHiddenCharacter', () => {
  it('finds controls, bidirectional controls and invisible format characters, by name', () => {
    expect(firstHiddenCharacter('ab\u202Ecd', 'all')).toEqual({
      name: 'U+202E RIGHT-TO-LEFT OVERRIDE',
      at: 3,
      kind: 'format',
    });
    expect(firstHiddenCharacter('😀\nx', 'all')).toEqual({
      name: 'U+000A LINE FEED',
      at: 2,
      kind: 'control',
    });
    for (const code of BIDI_AND_INVISIBLE) {
      const found = firstHiddenCharacter(`a${String.fromCodePoint(code)}b`, 'all');
      expect(found?.kind, characterName(code)).toBe('format');
      expect(found?.name).toMatch(/^U\+[0-9A-F]{4} [A-Z]/);
    }
    for (let c = 0; c <= 0x9f; c = c === 0x1f ? 0x7f : c + 1) {
      expect(firstHiddenCharacter(`a${String.fromCharCode(c)}`, 'all')?.kind).toBe('control');
    }
  });

  it('leaves the joiners of scripts and emoji, the soft hyphen and ordinary text alone', () => {
    for (const text of ['می\u200Cخواهم', '👩\u200D💻', 'Zoë 🦄', 'Ab\u00ADsatz', '日本', 'a b']) {
      expect(firstHiddenCharacter(text, 'all'), text).toBeUndefined();
    }
  });

  it('finds only controls and lone surrogates for a reference, as referenceProblem refuses', () => {
    expect(firstHiddenCharacter('a\u202Eb', 'controls')).toBeUndefined();
    expect(referenceProblem('a\u202Eb')).toBeUndefined();
    expect(firstHiddenCharacter('a\tb', 'controls')?.name).toBe('U+0009 CHARACTER TABULATION');
    expect(referenceProblem('a\tb')?.reason).toContain('U+0009 CHARACTER TABULATION');
    expect(firstHiddenCharacter('a\uD800', 'controls')?.kind).toBe('surrogate');
  });
});

/** The problems of a file, as the user sees them. */
async function lines(name: string, content: string | Buffer): Promise<string[]> {
  const r = await intake(memorySource(name, content));
  expect(r.payouts.map((p) => p.reference_id)).toEqual(['ok-1']);
  return r.lines;
}

describe('intake refuses a recipient or description that shows otherwise than it is sent', () => {
  it('in CSV, each row by its line, a quoted line break included', async () => {
    const r = await intakeCsv(
      `${HEADER}\nok-1,1.00,USD,a@x,fine\nb-1,1.00,USD,"evil\u202Egro.x",\nb-2,1.00,USD,a@x,"two\r\nlines"\nb-3,1.00,USD,\u2066a@x\u2069,"x\u200Fy"\n`,
    );
    expect(r.payouts.map((p) => p.reference_id)).toEqual(['ok-1']);
    expect(r.lines).toEqual([
      'test.csv line 3: recipient "evil\\u202egro.x": holds U+202E RIGHT-TO-LEFT OVERRIDE at character 5, an invisible character that changes how the text shows, so the confirmation or a statement could show other text than the one sent: remove it from the file and run again',
      'test.csv line 4: description "two\\r\\nlines": holds the control character U+000D CARRIAGE RETURN at character 4; a description must be one line of visible text: remove it from the file and run again',
      'test.csv line 6: recipient "\\u2066a@x\\u2069": holds U+2066 LEFT-TO-RIGHT ISOLATE at character 1, an invisible character that changes how the text shows, so the confirmation or a statement could show other text than the one sent: remove it from the file and run again',
      'test.csv line 6: description "x\\u200fy": holds U+200F RIGHT-TO-LEFT MARK at character 2, an invisible character that changes how the text shows, so the confirmation or a statement could show other text than the one sent: remove it from the file and run again',
    ]);
  });

  it('in JSON, a \\u escape included', async () => {
    const json = JSON.stringify([
      { reference_id: 'ok-1', amount: '1', currency: 'USD', recipient: 'a@x' },
      { reference_id: 'b-1', amount: '1', currency: 'USD', recipient: 'a@x\u2028b' },
    ]);
    expect(await lines('p.json', json)).toEqual([
      expect.stringMatching(
        /^p\.json .*2.*: recipient "a@x\\u2028b": holds U\+2028 LINE SEPARATOR at character 4, /,
      ),
    ]);
  });

  it('in NDJSON, by line', async () => {
    const text = [
      '{"reference_id":"ok-1","amount":"1","currency":"USD","recipient":"a@x"}',
      '{"reference_id":"b-1","amount":"1","currency":"USD","recipient":"a@x","description":"a\\u0007b"}',
    ].join('\n');
    expect(await lines('p.ndjson', text)).toEqual([
      expect.stringMatching(
        /^p\.ndjson line 2: description "a\\x07b": holds the control character U\+0007 BELL at character 2; /,
      ),
    ]);
  });

  it('in .xlsx, a line break typed into a cell included', async () => {
    const sheet = XLSX.utils.aoa_to_sheet([
      ['reference_id', 'amount', 'currency', 'recipient', 'description'],
      ['ok-1', '1.00', 'USD', 'a@x', 'fine'],
      ['b-1', '1.00', 'USD', 'a@x', 'first line\nsecond line'],
    ]);
    const book = XLSX.utils.book_new();
    XLSX.utils.book_append_sheet(book, sheet, 'Payouts');
    const bytes = XLSX.write(book, { type: 'buffer', bookType: 'xlsx' }) as Buffer;
    expect(await lines('run.xlsx', bytes)).toEqual([
      expect.stringMatching(
        /^run\.xlsx sheet Payouts row 3: description "first line\\nsecond line": holds the control character U\+000A LINE FEED at character 11; /,
      ),
    ]);
  });
});
