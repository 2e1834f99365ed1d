import { PassThrough } from 'node:stream';
import { Chalk } from 'chalk';
import { describe, expect, it } from 'vitest';
import { formatProblem } from '../../../src/errors.js';
import { displayText, terminalText } from '../../../src/output/display.js';
import { Output } from '../../../src/output/output.js';

/** Raw characters a terminal acts on: none may reach it from text we did not write. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const ATTACK = 'PO-1\u001b]0;pwned\u0007\nnext';

/** An Output over in-memory streams; `tty` gives both streams colours. */
function capture(tty: boolean) {
  const stdout = Object.assign(new PassThrough(), { isTTY: tty });
  const stderr = Object.assign(new PassThrough(), { isTTY: tty });
  let out = '';
  let err = '';
  stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  stderr.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  const output = new Output({
    stdout,
    stderr,
    stdin: new PassThrough(),
    json: false,
    debug: true,
    noColor: false,
    chalk: Chalk,
  });
  return { output, out: () => out, err: () => err };
}

describe('displayText', () => {
  it.each([
    ['\u001b[2J', '\\x1b[2J'],
    ['a\nb', 'a\\nb'],
    ['a\r\nb', 'a\\r\\nb'],
    ['a\tb', 'a\\tb'],
    ['\u0000', '\\x00'],
    ['\u0007', '\\x07'],
    ['\u007f', '\\x7f'],
    ['\u0085 \u009b1m', '\\x85 \\x9b1m'],
    ['abc\u202edcba', 'abc\\u202edcba'],
    [
      '\u202a\u202b\u202c\u202d \u2066\u2067\u2068\u2069',
      '\\u202a\\u202b\\u202c\\u202d \\u2066\\u2067\\u2068\\u2069',
    ],
    [ATTACK, 'PO-1\\x1b]0;pwned\\x07\\nnext'],
  ])('escapes %j', (raw, shown) => {
    expect(displayText(raw)).toBe(shown);
  });

  it('leaves ordinary text as it is, backslashes included', () => {
    for (const s of [
      'Zahlung Ä €',
      'Größe ✓ 日本 😀',
      'C:\\data\\may.csv',
      '',
      'PO-2026-11-0001',
    ]) {
      expect(displayText(s)).toBe(s);
    }
  });
});

describe('terminalText', () => {
  const red = '\u001b[31mfailed\u001b[39m';

  it('keeps our colours and line breaks where asked, and escapes every other control', () => {
    const text = `${red}\n\u001b]0;t\u0007\u001b[2J`;
    expect(terminalText(text, { colours: true, lineBreaks: true })).toBe(
      `${red}\n\\x1b]0;t\\x07\\x1b[2J`,
    );
    expect(terminalText(text, { colours: true, lineBreaks: false })).toBe(
      `${red}\\n\\x1b]0;t\\x07\\x1b[2J`,
    );
    // Where we write no colours, a colour sequence is not ours.
    expect(terminalText(red, { colours: false, lineBreaks: true })).toBe(
      '\\x1b[31mfailed\\x1b[39m',
    );
  });
});

describe('Output on a terminal or a pipe', () => {
  it.each([true, false])('escapes what is not ours (terminal: %s)', async (tty) => {
    const { output, out, err } = capture(tty);
    const table = await output.table(
      ['reference_id', 'status'],
      [
        [ATTACK, output.color.red('failed')],
        ['PO-2', output.color.green('success')],
      ],
    );
    output.print(table);
    output.print(`first\n${ATTACK}`);
    output.warn(ATTACK);
    output.info(ATTACK);
    output.error(ATTACK);
    output.debug(ATTACK);
    const withoutColours = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, '');
    // Tabs on a pipe are ours: the table's columns.
    expect(withoutColours(out()).replaceAll('\t', ' ')).not.toMatch(RAW_CONTROL);
    expect(withoutColours(err())).not.toMatch(RAW_CONTROL);
    if (tty) expect(out()).toContain('\u001b[31mfailed');
    else expect(out()).not.toContain('\u001b');
    // The table keeps one line per row: the reference's line break does not split it.
    const lines = withoutColours(table).split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[1]).toContain('PO-1\\x1b]0;pwned\\x07\\nnext');
    expect(lines[1]).toContain('failed');
    // A message keeps line breaks (ours, or what displayText missed); displayText's text has none.
    expect(out()).toContain('first\nPO-1\\x1b');
    const before = err().length;
    output.warn(`payout ${displayText(ATTACK)} failed`);
    expect(err().slice(before)).toMatch(/^[^\n]*PO-1\\x1b\]0;pwned\\x07\\nnext failed\n$/);
  });
});

describe('formatProblem', () => {
  it('shows a value quoted as JSON quotes it, control characters escaped', () => {
    expect(
      formatProblem({
        file: 'in\u001b.csv',
        location: 'line 3',
        field: 'reference_id',
        value: 'a"b\\c\n\u202e',
        message: 'bad \u0007reference',
      }),
    ).toBe('in\\x1b.csv line 3: reference_id "a\\"b\\\\c\\n\\u202e": bad \\x07reference');
    expect(formatProblem({ file: 'f.csv', field: 'amount', value: '1,234.56', message: 'm' })).toBe(
      'f.csv: amount "1,234.56": m',
    );
  });
});
