import { describe, expect, it } from 'vitest';
import { readPayouts } from '../../../src/input/index.js';
import { CurrencyTable } from '../../../src/money/currencies.js';
import { HEADER, intakeCsv, intakeFixture, memorySource } from './helpers.js';

describe('CSV spreadsheet exports', () => {
  it('reads an Excel "CSV UTF-8" export: BOM, CRLF, quoted comma, empty description', async () => {
    const r = await intakeFixture('excel-bom-crlf.csv');
    expect(r.problems).toEqual([]);
    expect(r.warnings).toEqual([]);
    expect(r.meta).toEqual({ rows: 3, csv: { delimiter: ',', decimalComma: false } });
    expect(
      r.payouts.map((p) => [
        p.location,
        p.reference_id,
        p.amount.text,
        p.currency,
        p.recipient,
        p.description,
      ]),
    ).toEqual([
      ['line 2', 'INV-1001', '1234.56', 'EUR', 'anna@example.com', 'Invoice 1001, March'],
      ['line 3', 'INV-1002', '0.99', 'EUR', '+4915112345678', 'Refund'],
      ['line 4', 'INV-1003', '100', 'USD', 'acct-778899', undefined],
    ]);
    expect(r.payouts[0]!.file).toBe('excel-bom-crlf.csv');
    expect(r.payouts[0]!.amount.minor).toBe(123456n);
  });

  it('detects semicolons and keeps a quoted semicolon inside a field', async () => {
    const r = await intakeFixture('semicolon.csv');
    expect(r.problems).toEqual([]);
    expect(r.payouts.map((p) => [p.reference_id, p.amount.text, p.description])).toEqual([
      ['DE-1', '12.50', 'Miete; Januar'],
      ['DE-2', '1000.05', 'Bonus'],
      ['DE-3', '7.5', undefined],
    ]);
    expect(r.payouts[2]!.amount.minor).toBe(750n);
  });

  it('refuses decimal commas row by row without --decimal-comma, naming the flag', async () => {
    const r = await intakeFixture('semicolon-decimal-comma.csv');
    expect(r.lines).toEqual([
      'semicolon-decimal-comma.csv line 2: amount "12,50": looks like a decimal comma: pass --decimal-comma (or write 12.50)',
      'semicolon-decimal-comma.csv line 3: amount "1.234,56": looks like a decimal comma: pass --decimal-comma (or write 1234.56)',
    ]);
    expect(r.payouts.map((p) => p.reference_id)).toEqual(['DE-12']);
    expect(r.meta.rows).toBe(3);
  });

  it('says how the file was read: its delimiter, and a decimal comma', async () => {
    const text = 'reference_id;amount;currency;recipient\nDE-10;12,50;EUR;max@example.de\n';
    const r = await intakeCsv(text, { decimalComma: true });
    expect(r.problems).toEqual([]);
    expect(r.meta.csv).toEqual({ delimiter: ';', decimalComma: true });
    const tabs = await intakeCsv('reference_id\tamount\tcurrency\trecipient\nT-1\t1.50\tEUR\tx\n');
    expect(tabs.meta.csv).toEqual({ delimiter: '\t', decimalComma: false });
  });

  it('reads a decimal comma without the flag when the amount header says so', async () => {
    // As `payouts` writes a retry file for a spreadsheet that reads 1234,56.
    const text =
      '\ufeffreference_id;new_reference_id;Amount (Decimal Comma);currency;recipient\r\n' +
      'N-1;N-1-R1;6105,84;EUR;felix@example.com\r\nN-2;;1.234,5;EUR;ana@example.com\r\n';
    const r = await intakeCsv(text);
    expect(r.problems).toEqual([]);
    expect(r.warnings).toEqual([]);
    expect(r.payouts.map((p) => [p.reference_id, p.amount.text, p.retry_of])).toEqual([
      ['N-1-R1', '6105.84', 'N-1'],
      ['N-2', '1234.5', undefined],
    ]);
    expect(r.meta.csv).toEqual({ delimiter: ';', decimalComma: true });
  });

  it('reads no decimal comma from a marked column other than the amount', async () => {
    const text =
      'reference_id;amount;currency;recipient;charges (decimal comma)\nN-1;6105,84;EUR;f@x.example;61,06\n';
    const r = await intakeCsv(text);
    expect(r.lines).toEqual([
      'test.csv line 2: amount "6105,84": looks like a decimal comma: pass --decimal-comma (or write 6105.84)',
    ]);
    expect(r.warnings[0]).toContain('ignoring column "charges (decimal comma)"');
  });

  it('detects tabs in a .tsv file, keeping commas and quoted fields', async () => {
    const r = await intakeFixture('tab-separated.tsv');
    expect(r.problems).toEqual([]);
    expect(
      r.payouts.map((p) => [p.reference_id, p.amount.text, p.currency, p.description]),
    ).toEqual([
      ['T-1', '5.00', 'GBP', 'Tab, with comma'],
      ['T-2', '6.10', 'GBP', 'Quoted "tab"'],
    ]);
  });

  it('reads quoted delimiters, doubled quotes and line breaks inside quotes, with start lines', async () => {
    const r = await intakeFixture('quoting.csv');
    expect(r.payouts.map((p) => [p.location, p.recipient, p.description])).toEqual([
      ['line 2', 'Doe, Jane', 'She said "hi"'],
      ['line 8', 'dave@example.com', 'plain quoted'],
    ]);
    // A line break is read into its field whole, and refused there by the row's first line.
    expect(r.problems.map((p) => [p.location, p.field, p.value])).toEqual([
      ['line 3', 'description', 'line one\nline two\nline three'],
      ['line 6', 'description', 'windows\r\nbreak'],
    ]);
  });

  it('keeps non-ASCII recipients and descriptions exactly', async () => {
    const r = await intakeFixture('unicode.csv');
    expect(r.problems).toEqual([]);
    expect(r.payouts.map((p) => [p.recipient, p.description])).toEqual([
      ['José Müller', 'Café für Zoë'],
      ['山田太郎', '日本への送金'],
      ['🦄 unicorn@example.com', 'Party 🎉🎂'],
    ]);
    expect(r.payouts[1]!.amount).toEqual({ text: '2000', minor: 2000n });
  });

  it('checks decimals against each currency: JPY 0, USD 2, BHD 3', async () => {
    const r = await intakeFixture('currencies.csv');
    expect(
      r.payouts.map((p) => [p.reference_id, p.currency, p.amount.text, p.amount.minor]),
    ).toEqual([
      ['C-1', 'JPY', '1500', 1500n],
      ['C-2', 'USD', '1234.56', 123456n],
      ['C-3', 'BHD', '12.345', 12345n],
      ['C-4', 'BHD', '0.001', 1n],
      ['C-8', 'USD', '10.10', 1010n],
    ]);
    expect(r.lines).toEqual([
      'currencies.csv line 6: amount "1500.5": this currency has no minor unit: use a whole number',
      'currencies.csv line 7: amount "1.234": this currency allows at most 2 decimals: round the amount to 2 decimals',
      'currencies.csv line 8: amount "1.2345": this currency allows at most 3 decimals: round the amount to 3 decimals',
    ]);
  });

  it('matches headers ignoring case and surrounding spaces', async () => {
    const r = await intakeFixture('odd-headers.csv');
    expect(r.problems).toEqual([]);
    expect(r.payouts).toHaveLength(1);
    expect(r.payouts[0]).toMatchObject({
      reference_id: 'H-1',
      currency: 'USD',
      description: 'Odd headers',
    });
  });

  it('ignores extra columns with one warning naming them', async () => {
    const r = await intakeFixture('extra-columns.csv');
    expect(r.problems).toEqual([]);
    expect(r.payouts.map((p) => [p.reference_id, p.amount.text])).toEqual([
      ['X-1', '1.00'],
      ['X-2', '2.00'],
    ]);
    expect(r.warnings).toHaveLength(1);
    expect(r.warnings[0]).toContain('extra-columns.csv');
    expect(r.warnings[0]).toContain('"Notes", "Internal ID", (unnamed column 7)');
  });

  it('reports a missing column once, with the headers found, and checks no row', async () => {
    const r = await intakeFixture('missing-column.csv');
    expect(r.payouts).toEqual([]);
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]).toMatchObject({
      file: 'missing-column.csv',
      location: 'line 1',
      field: 'currency',
    });
    expect(r.lines[0]).toContain(
      'column is missing; the header has "reference_id", "amount", "recipient"',
    );
    expect(r.lines[0]).toContain('--map currency="<header>"');
    expect(r.meta.rows).toBe(0);
  });

  it('names every missing column in one problem that lists the header once', async () => {
    const r = await intakeCsv('id,amount\n1,2\n');
    expect(r.lines).toEqual([
      'test.csv line 1: columns reference_id, currency and recipient are missing; the header has "id", "amount": add "reference_id", "currency" and "recipient" columns, or name the columns to use with --map reference_id="<header>",currency="<header>",recipient="<header>"',
    ]);
  });

  it('takes the usual spellings of the headers, in any case and spacing', async () => {
    for (const header of [
      'Reference ID,Amount,Currency,Recipient',
      'reference-id,AMOUNT,currency ,Recipient',
      'REFERENCE_ID, amount,Currency,RECIPIENT',
      'ReferenceId,Amount,Currency,Recipient',
    ]) {
      const r = await intakeCsv(`${header}\nA-1,1.00,EUR,a@example.com\n`);
      expect(r.lines, header).toEqual([]);
      expect(r.payouts.map((p) => p.reference_id)).toEqual(['A-1']);
    }
  });

  it('reports a field named by two columns', async () => {
    const r = await intakeFixture('duplicate-header.csv');
    expect(r.payouts).toEqual([]);
    expect(r.lines).toEqual([
      'duplicate-header.csv line 1: amount: appears in more than one column ("amount" in column 2, "Amount" in column 5): keep only one',
    ]);
  });

  it('reads other header names given with --map, ignoring their case', async () => {
    const map = {
      reference_id: 'ref',
      amount: 'BETRAG',
      currency: 'Währung',
      recipient: 'Empfänger',
      description: 'verwendungszweck',
    };
    const r = await intakeFixture('mapped-headers.csv', { map });
    expect(r.problems).toEqual([]);
    expect(r.payouts[0]).toMatchObject({
      reference_id: 'B-1',
      amount: { text: '10.00' },
      currency: 'EUR',
      recipient: 'a@example.de',
      description: 'Test',
    });
  });

  it('says when a column named by --map is missing', async () => {
    const r = await intakeFixture('mapped-headers.csv', { map: { amount: 'Summe' } });
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]!.message).toContain('check the name "Summe" given to --map');
  });

  it('hints at the delimiter when the header reads as a single column', async () => {
    const r = await intakeCsv('reference_id;amount;currency;recipient\nA;1;USD;x\n', {
      delimiter: ',',
    });
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]!.message).toContain('single column with the delimiter ","');
  });

  it('uses an explicit delimiter over detection', async () => {
    const r = await intakeCsv(
      'reference_id;amount;currency;recipient;a,b,c\nA;1.00;USD;x;1,2,3\n',
      { delimiter: 'semicolon' },
    );
    expect(r.problems).toEqual([]);
    expect(r.payouts[0]!.amount.text).toBe('1.00');
    const tab = await intakeCsv('reference_id\tamount\tcurrency\trecipient\nA\t1.00\tUSD\tx\n', {
      delimiter: '\\t',
    });
    expect(tab.payouts).toHaveLength(1);
  });

  it('counts blank lines in line numbers and skips them, also multi-line records', async () => {
    const r = await intakeFixture('blank-lines.csv');
    expect(r.payouts.map((p) => [p.reference_id, p.location])).toEqual([['B-1', 'line 4']]);
    expect(r.lines).toEqual([
      'blank-lines.csv line 7: description "multi\\nline": holds the control character U+000A LINE FEED at character 6; a description must be one line of visible text: remove it from the file and run again',
      'blank-lines.csv line 10: amount "-3.00": must be greater than 0: correct the amount, or remove the payout',
    ]);
    expect(r.meta.rows).toBe(3);
  });

  it('reports rows with the wrong number of fields and keeps going', async () => {
    const r = await intakeFixture('ragged.csv');
    expect(r.payouts.map((p) => p.reference_id)).toEqual(['R-1', 'R-5']);
    expect(r.lines).toEqual([
      'ragged.csv line 3: has 4 fields but the header has 5: check this line for a missing or extra "," and for unbalanced quotes',
      'ragged.csv line 4: has 6 fields but the header has 5: check this line for a missing or extra "," and for unbalanced quotes',
      'ragged.csv line 5: has 6 fields but the header has 5: check this line for a missing or extra "," and for unbalanced quotes',
    ]);
    expect(r.meta.rows).toBe(5);
  });

  it('refuses a Windows-1252 file, naming the line of the first bad byte and the fix', async () => {
    const r = await intakeFixture('windows-1252.csv');
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]).toMatchObject({ file: 'windows-1252.csv', location: 'line 3' });
    expect(r.problems[0]!.field).toBeUndefined();
    expect(r.problems[0]!.message).toMatch(
      /^not valid UTF-8 \(byte 0xE9 at offset 123\): if the file was saved as Windows-1252 or ISO-8859-1 \(Excel "CSV" on Windows\), pass --encoding windows-1252; or save it as "CSV UTF-8"$/,
    );
    expect(r.problems.some((p) => p.message.includes('Ren'))).toBe(false);
  });

  it('reads a UTF-16 file by its byte-order mark, with the delimiter its header shows', async () => {
    const r = await intakeFixture('utf16le.csv');
    expect(r.lines).toEqual([]);
    expect(r.payouts.map((p) => [p.reference_id, p.amount.text, p.recipient])).toEqual([
      ['X', '1.00', 'a@b.c'],
    ]);
  });

  it('says "no payouts in this file" for a header-only or empty file', async () => {
    for (const name of ['header-only.csv', 'empty.csv']) {
      const r = await intakeFixture(name);
      expect(r.lines).toEqual([`${name}: no payouts in this file`]);
      expect(r.meta.rows).toBe(0);
    }
    const blanks = await intakeCsv(`\n\n${HEADER}\n\n,,,,\n`);
    expect(blanks.lines).toEqual(['test.csv: no payouts in this file']);
  });

  it('reports a file that cannot be opened as a problem without a field', async () => {
    const r = await intakeFixture('does-not-exist.csv');
    expect(r.problems).toEqual([
      {
        file: 'does-not-exist.csv',
        message: 'cannot be read: there is no such file: check the name and the folder',
      },
    ]);
    expect(r.meta.rows).toBe(0);
  });

  it('reports an unclosed quote at the line where its record starts', async () => {
    const r = await intakeCsv(
      `${HEADER}\nA,1.00,USD,a@x.com,ok\nB,2.00,USD,"b@x.com,never closed\nC,3.00,USD,c@x.com,\n`,
    );
    expect(r.payouts.map((p) => p.reference_id)).toEqual(['A']);
    expect(r.lines).toEqual([
      'test.csv line 3: a quoted field starting on this line is never closed: add the closing quote',
    ]);
  });

  it('reports a stray quote inside an unquoted field, at its line', async () => {
    const r = await intakeCsv(
      `${HEADER}\nA,1.00,USD,a@x.com,ok\n\nB,2.00,USD,b@x.com,12" screen\n`,
    );
    expect(r.lines).toHaveLength(1);
    expect(r.lines[0]).toMatch(/^test\.csv line 4: a field has a quote inside it/);
  });

  it('stops a record that never ends instead of holding the file in memory', async () => {
    const body = 'x'.repeat(2_000_000);
    const r = await intakeCsv(`${HEADER}\nA,1.00,USD,a@x.com,"${body}\n`);
    expect(r.lines).toHaveLength(1);
    expect(r.lines[0]).toMatch(
      /^test\.csv line 2: a record starting on this line is longer than 1048576 bytes/,
    );
  });

  it('reports every problem of a row, in column order', async () => {
    const r = await intakeCsv(`${HEADER}\n  ,1.234,EURO,  ,${'é'.repeat(256)}\n`);
    expect(r.problems.map((p) => [p.field, p.value])).toEqual([
      ['reference_id', undefined],
      ['currency', 'EURO'],
      ['recipient', undefined],
      ['description', `${'é'.repeat(40)}…`],
    ]);
    expect(r.payouts).toEqual([]);
  });

  it('counts description length in code points: 255 emoji pass, 256 do not', async () => {
    const r = await intakeCsv(
      `${HEADER}\nA,1.00,USD,a@x.com,${'🦄'.repeat(255)}\nB,1.00,USD,b@x.com,  ${'🦄'.repeat(256)}  \n`,
    );
    expect(r.payouts.map((p) => [p.reference_id, [...(p.description ?? '')].length])).toEqual([
      ['A', 255],
    ]);
    expect(r.lines).toEqual([
      `test.csv line 3: description "${'🦄'.repeat(40)}…": is 256 characters long; the service accepts at most 255: shorten it`,
    ]);
  });

  it('trims surrounding spaces but keeps inner text as written', async () => {
    const r = await intakeCsv(`${HEADER}\n  A 1 , 1.00 , usd ,  Jane  Doe <jane@x.com>  , a  b \n`);
    expect(r.payouts[0]).toMatchObject({
      reference_id: 'A 1',
      currency: 'USD',
      recipient: 'Jane  Doe <jane@x.com>',
      description: 'a  b',
    });
  });

  it('reads lines ending in CRLF, LF or CR, and never merges rows of a file mixing them silently', async () => {
    for (const eol of ['\r\n', '\n', '\r']) {
      const r = await intakeCsv(
        [HEADER, 'A,1.00,USD,a@x.com,"q"', 'B,2.00,USD,b@x.com,"q"', ''].join(eol),
      );
      expect(r.problems).toEqual([]);
      expect(r.payouts.map((p) => p.location)).toEqual(['line 2', 'line 3']);
    }
    const lfFirst = await intakeCsv(`${HEADER}\nA,1.00,USD,a@x.com,x\r\nB,2.00,USD,b@x.com,y\n`);
    expect(lfFirst.problems).toEqual([]);
    expect(lfFirst.payouts.map((p) => [p.reference_id, p.description])).toEqual([
      ['A', 'x'],
      ['B', 'y'],
    ]);
    const crlfFirst = await intakeCsv(
      `${HEADER}\r\nA,1.00,USD,a@x.com,x\nB,2.00,USD,b@x.com,y\r\n`,
    );
    expect(crlfFirst.payouts).toEqual([]);
    expect(crlfFirst.lines).toEqual([
      'test.csv line 2: has 9 fields but the header has 5: check this line for a missing or extra "," and for unbalanced quotes; ' +
        'if its line break is not inside quotes, the file mixes CRLF and LF line endings: save it again from the spreadsheet, or convert it to one kind of line ending',
    ]);
    const quoted = await intakeCsv(`${HEADER}\nA,1.00,USD,a@x.com,"x"\r\nB,2.00,USD,b@x.com,"y"\n`);
    expect(quoted.lines).toEqual([
      'test.csv line 2: the file mixes CRLF and LF line endings: save it again from the spreadsheet, or convert it to one kind of line ending; the rest of the file was not read',
    ]);
  });

  it('gives the same result whatever the chunk size, even one byte at a time', async () => {
    const text = Buffer.from(
      `\ufeff${HEADER}\r\n"Q;1",1.00,EUR,"Zoë 🦄","multi\r\nline, é"\r\n\r\nQ2,2.50,JPY,x,y\r\nQ3,3,JPY,日本,\r\n`,
    );
    const whole = await intakeCsv(text);
    for (const size of [1, 2, 3, 7]) {
      const r = await intakeCsv(text, {}, size);
      expect(r.payouts).toEqual(whole.payouts);
      expect(r.problems).toEqual(whole.problems);
    }
    expect(whole.payouts.map((p) => [p.location, p.reference_id])).toEqual([['line 6', 'Q3']]);
    expect(whole.lines).toEqual([
      'test.csv line 2: description "multi\\r\\nline, é": holds the control character U+000D CARRIAGE RETURN at character 6; a description must be one line of visible text: remove it from the file and run again',
      'test.csv line 5: amount "2.50": this currency has no minor unit: use a whole number',
    ]);
  });

  it('keeps line numbers right when the first quoted line break comes late in the file', async () => {
    const rows = [HEADER];
    for (let i = 1; i <= 300; i++) rows.push(`R${i},1.00,USD,r${i}@x.com,plain`);
    rows.push('M,1.00,USD,m@x.com,"two\nlines"', '', 'Z,1.00,USD,z@x.com,0', 'bad,x,USD,b@x.com,1');
    for (const size of [1, 7, 4096, 65536]) {
      const r = await intakeCsv(`${rows.join('\n')}\n`, {}, size);
      expect(r.payouts).toHaveLength(301);
      expect(r.payouts.slice(-2).map((p) => [p.reference_id, p.location])).toEqual([
        ['R300', 'line 301'],
        ['Z', 'line 305'],
      ]);
      // M's description holds a line break: refused by the line its row starts on.
      expect(r.problems.map((p) => p.location)).toEqual(['line 302', 'line 306']);
    }
  });

  it('finds a bad byte split across chunks and on a later line', async () => {
    const good = Buffer.from(`${HEADER}\nA,1.00,USD,a@x.com,ok\nB,2.00,USD,b@x.com,`);
    const text = Buffer.concat([good, Buffer.from([0xc3]), Buffer.from(',oops\n')]);
    for (const size of [1, 5, 65536]) {
      const r = await intakeCsv(text, {}, size);
      expect(r.problems).toHaveLength(1);
      expect(r.problems[0]!.location).toBe('line 3');
    }
  });

  it('accepts currencies allowed with --allow-currency, with their decimals', async () => {
    const csv = `${HEADER}\nA,1.25,tst,a@x.com,\nB,1.25,XYZ,b@x.com,\nC,1,USDC,c@x.com,\nD,1,$,d@x.com,\n`;
    const r = await intakeCsv(csv, {
      currencies: new CurrencyTable([
        ['TST', 6],
        ['USDC', 6],
      ]),
    });
    expect(r.payouts.map((p) => [p.currency, p.amount.minor])).toEqual([['TST', 1250000n]]);
    expect(r.lines).toEqual([
      'test.csv line 3: currency "XYZ": not an ISO 4217 currency code: check it, or pass --allow-currency XYZ',
      'test.csv line 4: currency "USDC": must be a three-letter ISO 4217 code, such as USD or EUR',
      'test.csv line 5: currency "$": write the three-letter ISO 4217 code instead of the symbol, such as USD or EUR',
    ]);
  });

  it('tells an optional sink hook the reference_id of each refused row', async () => {
    const refused: string[] = [];
    const csv = `${HEADER}\nA,1,2,3\nP-1,"1,234.56",USD,a@x.com,\n,1.00,XYZ,b@x.com,\nP-1,5.00,USD,c@x.com,\n`;
    await readPayouts(
      memorySource('r.csv', csv),
      { currencies: new CurrencyTable() },
      {
        payout() {},
        problem() {},
        warning() {},
        refused: (ref, file, location) => refused.push(`${file} ${location} ${ref}`),
      },
    );
    expect(refused).toEqual(['r.csv line 3 P-1']);
  });

  it('is deterministic: a second read of the same file gives the same payouts', async () => {
    const a = await intakeFixture('quoting.csv');
    const b = await intakeFixture('quoting.csv');
    expect(b.payouts).toEqual(a.payouts);
    expect(b.problems).toEqual(a.problems);
    expect(a.payouts).toHaveLength(2);
  });
});
