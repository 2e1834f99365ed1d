import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readReferenceFile } from '../../../src/core/status/reference-file.js';
import { decodeWindows1252, InputDecoder } from '../../../src/input/encoding.js';
import { detectDelimiter } from '../../../src/input/index.js';
import { type Intake, intake, intakeCsv, memorySource } from './helpers.js';

/** Windows-1252 bytes of a text using only ASCII and the few characters mapped here. */
function cp1252(text: string): Buffer {
  const high: Record<string, number> = {
    ä: 0xe4,
    ö: 0xf6,
    ü: 0xfc,
    ß: 0xdf,
    '€': 0x80,
    '’': 0x92,
    '–': 0x96,
  };
  return Buffer.from(
    [...text].map((c) => {
      const code = high[c] ?? c.charCodeAt(0);
      if (code > 0x7f && high[c] === undefined) throw new Error(`no byte for ${c}`);
      return code;
    }),
  );
}

/** UTF-16 bytes with a byte-order mark. */
function utf16(text: string, order: 'le' | 'be' = 'le'): Buffer {
  const le = Buffer.from(text, 'utf16le');
  if (order === 'le') return Buffer.concat([Buffer.from([0xff, 0xfe]), le]);
  return Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(le).swap16()]);
}

const ROWS = [
  ['DE-1', '1234.56', 'EUR', 'jürgen@example.de', 'Büro Köln Straße'],
  ['DE-2', '0.99', 'EUR', 'anna@example.de', 'Spesen 5€ – Grüße'],
  ['DE-3', '12', 'EUR', 'lena@example.de', 'Lena’s 🦄 award'],
];
const HEADER = ['reference_id', 'amount', 'currency', 'recipient', 'description'];

/** The rows as a file text with this delimiter and line end. */
function text(rows: string[][], delimiter: string, eol: string): string {
  return [HEADER, ...rows].map((r) => r.join(delimiter)).join(eol) + eol;
}

function summary(r: Intake) {
  return {
    lines: r.lines,
    payouts: r.payouts.map((p) => [
      p.location,
      p.reference_id,
      p.amount.text,
      p.currency,
      p.recipient,
      p.description,
    ]),
  };
}

describe('legacy encodings', () => {
  it('maps every Windows-1252 byte of 0x80-0x9F as the WHATWG standard does', () => {
    expect(decodeWindows1252(Buffer.from([0x80, 0x92, 0x9f, 0x81, 0xe4, 0x41]))).toBe(
      '€’Ÿ\u0081äA',
    );
  });

  it('reads UTF-16LE "Unicode text" (BOM, tabs, CRLF) as its UTF-8 equivalent, at any chunk size', async () => {
    const expected = summary(await intakeCsv(text(ROWS, ',', '\n')));
    expect(expected.lines).toEqual([]);
    const bytes = utf16(text(ROWS, '\t', '\r\n'));
    // Odd sizes split code units, and some split the emoji's surrogate pair.
    for (const size of [1, 2, 3, 5, 7, 64, 1 << 16]) {
      expect(summary(await intakeCsv(bytes, {}, size)), `size ${size}`).toEqual(expected);
    }
  });

  it('reads UTF-16BE with its byte-order mark, and UTF-16LE without one given --encoding', async () => {
    const expected = summary(await intakeCsv(text(ROWS, ',', '\n')));
    expect(summary(await intakeCsv(utf16(text(ROWS, '\t', '\n'), 'be'), {}, 3))).toEqual(expected);
    const bare = Buffer.from(text(ROWS, '\t', '\n'), 'utf16le');
    expect(summary(await intakeCsv(bare, { encoding: 'utf-16le' }, 5))).toEqual(expected);
  });

  it('reads Windows-1252 given --encoding (iso-8859-1 alike), at any chunk size', async () => {
    const rows = ROWS.slice(0, 2);
    const expected = summary(await intakeCsv(text(rows, ';', '\r\n')));
    const bytes = cp1252(text(rows, ';', '\r\n'));
    for (const encoding of ['windows-1252', 'iso-8859-1'] as const) {
      for (const size of [1, 2, 3, 17, 1 << 16]) {
        const r = await intakeCsv(bytes, { encoding }, size);
        expect(summary(r), `${encoding} size ${size}`).toEqual(expected);
      }
    }
  });

  it('lets a byte-order mark win over --encoding', async () => {
    const r = await intakeCsv(`\ufeff${text(ROWS, ',', '\n')}`, { encoding: 'windows-1252' });
    expect(r.payouts.map((p) => p.recipient)).toContain('jürgen@example.de');
    const u = await intakeCsv(utf16(text(ROWS, '\t', '\n')), { encoding: 'windows-1252' });
    expect(u.lines).toEqual([]);
    expect(u.payouts).toHaveLength(3);
  });

  it('refuses UTF-8 text read with --encoding windows-1252, which would garble its letters', async () => {
    for (const size of [1, 4, 1 << 16]) {
      const r = await intakeCsv(text(ROWS, ',', '\n'), { encoding: 'windows-1252' }, size);
      expect(r.lines, `size ${size}`).toEqual([
        'test.csv line 2: is UTF-8 text, not Windows-1252: its letters would be read wrongly (ü as Ã¼): leave out --encoding',
      ]);
    }
    const ascii = await intakeCsv(text([['A', '1', 'EUR', 'a@x', '']], ',', '\n'), {
      encoding: 'iso-8859-1',
    });
    expect(ascii.lines).toEqual([]);
  });

  it('refuses a broken UTF-16 character at its line, whatever the chunk size', async () => {
    const head = Buffer.from(`${HEADER.join('\t')}\nA\t1\tEUR\tx\n`, 'utf16le');
    const lone = Buffer.from([0x00, 0xd8]); // a high surrogate followed by no low one
    const bytes = Buffer.concat([
      Buffer.from([0xff, 0xfe]),
      head,
      lone,
      Buffer.from('B\t1', 'utf16le'),
    ]);
    for (const size of [1, 3, 1 << 16]) {
      const r = await intakeCsv(bytes, {}, size);
      expect(r.lines, `size ${size}`).toEqual([
        'test.csv line 3: is not valid UTF-16LE text: it holds a broken character (or U+FFFD, the mark of a character lost in an earlier conversion): save it again as "CSV UTF-8"',
      ]);
    }
    const odd = await intakeCsv(
      Buffer.concat([utf16(`${HEADER.join('\t')}\n`), Buffer.from([0x41])]),
    );
    expect(odd.lines).toEqual([expect.stringMatching(/^test\.csv line 2: is not valid UTF-16LE/)]);
  });

  it('refuses NUL characters in Windows-1252, pointing at UTF-16 without a mark', async () => {
    const bare = Buffer.from(text(ROWS, '\t', '\n'), 'utf16le');
    const r = await intakeCsv(bare, { encoding: 'windows-1252' });
    expect(r.lines).toEqual([
      'test.csv line 1: holds a NUL character, which text files do not (read as Windows-1252): if it is UTF-16 text without a byte-order mark, pass --encoding utf-16le; else check that this is the payout file',
    ]);
    const utf8 = await intakeCsv(bare);
    expect(utf8.lines).toEqual([
      expect.stringMatching(
        /^test\.csv line 1: not valid UTF-8 text \(byte 0x00 at offset 1: .*pass --encoding utf-16le/,
      ),
    ]);
  });

  it('reads JSON and NDJSON in the same encodings', async () => {
    const json = '[{"reference_id":"a","amount":"1","currency":"EUR","recipient":"Jörg"}]';
    const r = await intake(memorySource('p.json', cp1252(json), 5), { encoding: 'windows-1252' });
    expect(r.payouts.map((p) => p.recipient)).toEqual(['Jörg']);
    const nd = utf16(`${json.slice(1, -1)}\r\n${json.slice(1, -1).replace('"a"', '"b"')}\r\n`);
    const n = await intake(memorySource('p.ndjson', nd, 3));
    expect(n.lines).toEqual([]);
    expect(n.payouts.map((p) => [p.reference_id, p.recipient])).toEqual([
      ['a', 'Jörg'],
      ['b', 'Jörg'],
    ]);
  });

  it('decodes a file shorter than a byte-order mark', () => {
    const d = new InputDecoder(undefined, true);
    expect(d.push(Buffer.from('a'))).toEqual(Buffer.alloc(0));
    expect(d.end()).toEqual(Buffer.from('a'));
    expect(d.encoding).toBe('utf-8');
  });
});

describe('decimal commas in CSV', () => {
  const german = (rows: string[][]) => text(rows, ';', '\r\n');

  it('reads 1.234,56 exactly with --decimal-comma', async () => {
    const rows = [
      ['A', '1.234,56', 'EUR', 'a@x.de', ''],
      ['B', '1.234.567,89', 'EUR', 'b@x.de', ''],
      ['C', '0,10', 'EUR', 'c@x.de', ''],
      ['D', '12', 'JPY', 'd@x.de', ''],
      ['E', '1.000', 'EUR', 'e@x.de', ''],
    ];
    const r = await intakeCsv(german(rows), { decimalComma: true });
    expect(r.lines).toEqual([]);
    expect(r.payouts.map((p) => [p.amount.text, p.amount.minor])).toEqual([
      ['1234.56', 123456n],
      ['1234567.89', 123456789n],
      ['0.10', 10n],
      ['12', 12n],
      ['1000', 100000n],
    ]);
  });

  it('refuses badly grouped dots with --decimal-comma, saying why', async () => {
    const rows = [
      ['A', '1.23,45', 'EUR', 'a@x.de', ''],
      ['B', '12.34', 'EUR', 'b@x.de', ''],
      ['C', '1,005', 'EUR', 'c@x.de', ''],
      ['D', '-1,5', 'EUR', 'd@x.de', ''],
    ];
    const r = await intakeCsv(german(rows), { decimalComma: true });
    expect(r.lines).toEqual([
      'test.csv line 2: amount "1.23,45": has a group of 2 digits after a "." ("1.23"): with --decimal-comma, "." separates thousands, in groups of three, such as 1.234.567,89: check the amount, and write its decimals after a comma',
      'test.csv line 3: amount "12.34": has a group of 2 digits after a "." ("12.34"): with --decimal-comma, "." separates thousands, in groups of three, such as 1.234.567,89: check the amount, and write its decimals after a comma',
      'test.csv line 4: amount "1,005": this currency allows at most 2 decimals: round the amount to 2 decimals',
      'test.csv line 5: amount "-1,5": must be greater than 0: correct the amount, or remove the payout',
    ]);
  });

  it('names --decimal-comma for such amounts without it, and in CSV only', async () => {
    const rows = [
      ['A', '1.234,56', 'EUR', 'a@x.de', ''],
      ['B', '1,234', 'EUR', 'b@x.de', ''],
    ];
    const r = await intakeCsv(german(rows));
    expect(r.lines).toEqual([
      'test.csv line 2: amount "1.234,56": looks like a decimal comma: pass --decimal-comma (or write 1234.56)',
      'test.csv line 3: amount "1,234": has a comma that may separate thousands or decimals: if thousands, write 1234; if it is a decimal comma, pass --decimal-comma (or write 1.234)',
    ]);
    const json = '[{"reference_id":"a","amount":"1,5","currency":"EUR","recipient":"r"}]';
    const j = await intake(memorySource('p.json', json));
    expect(j.lines).toEqual([
      'p.json item 1: amount "1,5": use "." as the decimal separator, such as 1234.56',
    ]);
    await expect(intake(memorySource('p.json', json), { decimalComma: true })).rejects.toThrow(
      'p.json: --decimal-comma applies to CSV files only',
    );
  });

  it('prefers ";" with --decimal-comma and tab in UTF-16 when the header line does not tell', async () => {
    expect(detectDelimiter(Buffer.from('a,b;c\n'), false, ';')).toBe(';');
    expect(detectDelimiter(Buffer.from('a,b,c;d\n'), false, ';')).toBe(',');
    expect(detectDelimiter(Buffer.from('a,b\tc\n'), false, '\t')).toBe('\t');
    // A header line whose only comma sits in a name: ";" wins the tie with --decimal-comma.
    const tie = 'reference_id;amount;currency;recipient,name\r\nA;1,5;EUR;x\r\n';
    const r = await intakeCsv(tie, { decimalComma: true, map: { recipient: 'recipient,name' } });
    expect(r.lines).toEqual([]);
    expect(r.payouts.map((p) => p.amount.text)).toEqual(['1.5']);
  });
});

describe('status --from reads UTF-16 "Unicode text" too', () => {
  it('reads a tab-separated UTF-16LE report and a UTF-16BE list, from a file or stdin', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'refs-'));
    try {
      writeFileSync(
        join(dir, 'report.txt'),
        utf16('file\treference_id\r\nrun.csv\tDE-1\r\nrun.csv\tDE-ä2\r\n'),
      );
      const stdin = new PassThrough();
      stdin.end(utf16('DE-1\nDE-3\n', 'be'));
      const ctx = { cwd: dir, stdin };
      await expect(readReferenceFile('report.txt', ctx)).resolves.toEqual(['DE-1', 'DE-ä2']);
      await expect(readReferenceFile('-', ctx)).resolves.toEqual(['DE-1', 'DE-3']);
      writeFileSync(
        join(dir, 'broken.txt'),
        Buffer.concat([utf16('DE-1\n'), Buffer.from([0x00, 0xd8])]),
      );
      await expect(readReferenceFile('broken.txt', ctx)).rejects.toThrow(
        '--from broken.txt: the file starts with a UTF-16 byte-order mark but holds a broken character',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
