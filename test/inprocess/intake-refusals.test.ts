import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as XLSX from '@e965/xlsx';
import { describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';

// Issue 31, item 4: a recipient or description holding a line break, another control
// character or a bidirectional override would show one recipient in the confirmation and pay
// another. Every such value of every file is listed by line before anything is sent.

const fixture = ledgerPerTest();
const HEADER = ['reference_id', 'amount', 'currency', 'recipient', 'description'];

/** A one-sheet workbook "Payouts" of text cells. */
function workbook(rows: string[][]): Buffer {
  const book = XLSX.utils.book_new();
  XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet(rows), 'Payouts');
  return XLSX.write(book, { type: 'buffer', bookType: 'xlsx' }) as Buffer;
}

describe('send refuses text that shows otherwise than it is paid', () => {
  it('in CSV, JSON, NDJSON and .xlsx: exit 2, every problem by file and line, nothing sent', async () => {
    const svc = await fixture.start();
    const home = fixture.home();
    const csv = join(home.dir, 'a.csv');
    writeFileSync(
      csv,
      `${HEADER.join(',')}\nA-1,1.00,EUR,ok@example.com,fine\nA-2,2.00,EUR,"moc.elpmaxe@\u202Eevil",rent\nA-3,3.00,EUR,b@example.com,"May\nJune"\n`,
    );
    const json = join(home.dir, 'b.json');
    writeFileSync(
      json,
      JSON.stringify([
        { reference_id: 'B-1', amount: '1.00', currency: 'EUR', recipient: 'c@example.com\u200F' },
      ]),
    );
    const ndjson = join(home.dir, 'c.ndjson');
    writeFileSync(
      ndjson,
      '{"reference_id":"C-1","amount":"1.00","currency":"EUR","recipient":"d@example.com","description":"tab\\there"}\n',
    );
    const xlsx = join(home.dir, 'd.xlsx');
    writeFileSync(xlsx, workbook([HEADER, ['D-1', '1.00', 'EUR', 'e@\u2066example.com', 'x']]));

    const r = await runMain(['send', csv, json, ndjson, xlsx, '--yes'], {
      env: svc.env(home.env),
      clock: new FakeClock(),
    });
    expect(r.code).toBe(2);
    const shown = r.stderr;
    expect(shown).toMatch(
      /a\.csv line 3: recipient "moc\.elpmaxe@\\u202eevil": holds U\+202E RIGHT-TO-LEFT OVERRIDE at character 13, .*: remove it from the file and run again/,
    );
    expect(shown).toMatch(
      /a\.csv line 4: description "May\\nJune": holds the control character U\+000A LINE FEED at character 4; a description must be one line of visible text/,
    );
    expect(shown).toMatch(
      /b\.json .*1.*: recipient "c@example\.com\\u200f": holds U\+200F RIGHT-TO-LEFT MARK/,
    );
    expect(shown).toMatch(
      /c\.ndjson line 1: description "tab\\there": holds the control character U\+0009 CHARACTER TABULATION/,
    );
    expect(shown).toMatch(
      /d\.xlsx sheet Payouts row 2: recipient "e@\\u2066example\.com": holds U\+2066 LEFT-TO-RIGHT ISOLATE/,
    );
    // The raw characters never reach the terminal.
    expect(shown).not.toMatch(/[\u202e\u200f\u2066\t]/);
    expect(svc.creates).toBe(0);
  });

  it('says so in the --json document too', async () => {
    const svc = await fixture.start();
    const home = fixture.home();
    const csv = join(home.dir, 'a.csv');
    writeFileSync(csv, `${HEADER.join(',')}\nA-1,1.00,EUR,"a@example.com\r\nb@example.com",\n`);
    const r = await runMain(['send', csv, '--yes', '--json'], {
      env: svc.env(home.env),
      clock: new FakeClock(),
    });
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('U+000D CARRIAGE RETURN');
    expect(svc.creates).toBe(0);
  });
});
