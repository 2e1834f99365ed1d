import { writeFileSync } from 'node:fs';
import * as XLSX from '@e965/xlsx';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';

// The same payouts as four files finance actually has: a UTF-8 CSV, a German Excel "CSV"
// (Windows-1252, ";", decimal commas, CRLF), Excel "Unicode text" (UTF-16LE with a
// byte-order mark, tabs, CRLF) and an .xlsx workbook. Each, sent through main() as the
// binary sends it, must reach the service as the very same request bodies.

const fixture = ledgerPerTest();

const HEADER = ['reference_id', 'amount', 'currency', 'recipient', 'description'];
/** reference, amount as written with a point, as written with a decimal comma, recipient, description. */
const PAYOUTS = [
  ['DE-1', '1234.56', '1.234,56', 'jürgen.müller@example.de', 'Prämie März'],
  ['DE-2', '0.10', '0,10', 'anna@example.de', 'Spesen 50€ Büro'],
  ['DE-3', '1234567.89', '1.234.567,89', 'grüße@example.de', 'Straße ö ü ß'],
  ['DE-4', '48000', '48.000', 'lena@example.de', ''],
  ['DE-5', '7.5', '7,5', 'ölfirma@example.de', 'Heizöl'],
];

/** Windows-1252 bytes of a text of ASCII and the few letters used here. */
function cp1252(text: string): Buffer {
  const high: Record<string, number> = { '€': 0x80, ß: 0xdf, ä: 0xe4, ö: 0xf6, ü: 0xfc };
  return Buffer.from([...text].map((c) => high[c] ?? c.charCodeAt(0)));
}

function table(rows: string[][], delimiter: string, eol: string): string {
  return [HEADER, ...rows].map((r) => r.join(delimiter)).join(eol) + eol;
}

const pointRows = PAYOUTS.map(([ref, point, , to, what]) => [ref!, point!, 'EUR', to!, what!]);
const commaRows = PAYOUTS.map(([ref, , comma, to, what]) => [ref!, comma!, 'EUR', to!, what!]);

/**
 * An .xlsx workbook of the payouts on a second sheet "Payouts": amounts whose shortest decimal
 * is the CSV text are numeric cells (one of them a formula with its saved value), 0.10 is a text
 * cell as the template's Text column keeps it, and an empty description is an empty cell.
 */
function workbook(): Buffer {
  const rows: XLSX.CellObject[][] = [HEADER.map((h) => ({ t: 's', v: h }))];
  for (const [ref, point, , to, what] of PAYOUTS) {
    const amount: XLSX.CellObject =
      String(Number(point)) === point ? { t: 'n', v: Number(point) } : { t: 's', v: point! };
    if (ref === 'DE-5') amount.f = '15/2';
    const description: XLSX.CellObject = what === '' ? { t: 'z' } : { t: 's', v: what! };
    rows.push([{ t: 's', v: ref! }, amount, { t: 's', v: 'EUR' }, { t: 's', v: to! }, description]);
  }
  const book = XLSX.utils.book_new();
  XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet([['notes']]), 'Notes');
  XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet(rows), 'Payouts');
  return XLSX.write(book, { type: 'buffer', bookType: 'xlsx' }) as Buffer;
}

const FILES: Array<{ name: string; bytes: Buffer; flags: string[] }> = [
  { name: 'run.csv', bytes: Buffer.from(table(pointRows, ',', '\n'), 'utf8'), flags: [] },
  {
    name: 'export-de.csv',
    bytes: cp1252(table(commaRows, ';', '\r\n')),
    flags: ['--encoding', 'windows-1252', '--decimal-comma'],
  },
  {
    name: 'unicode.txt',
    bytes: Buffer.concat([
      Buffer.from([0xff, 0xfe]),
      Buffer.from(table(pointRows, '\t', '\r\n'), 'utf16le'),
    ]),
    flags: [],
  },
  { name: 'run.xlsx', bytes: workbook(), flags: ['--sheet', 'Payouts'] },
];

/** Sends one file to a service of its own, from a home of its own; the bodies it received. */
async function bodiesOf(file: (typeof FILES)[number]): Promise<string[]> {
  const svc = await fixture.start();
  const home = fixture.home();
  const path = join(home.dir, file.name);
  writeFileSync(path, file.bytes);
  const args = ['send', path, '--yes', '--json', '--chunk-size', '2', '--concurrency', '1'];
  const r = await runMain([...args, ...file.flags], {
    env: svc.env(home.env),
    clock: new FakeClock(),
  });
  expect(r.stderr, file.name).not.toMatch(/error/i);
  expect(r.code, `${file.name}: ${r.stderr}`).toBe(0);
  expect(svc.held.size).toBe(PAYOUTS.length);
  return svc.bodies;
}

describe('legacy encodings, decimal commas and .xlsx send what UTF-8 sends', () => {
  it('sends the same request bodies, byte for byte, from the four files', async () => {
    const [utf8, german, unicode, xlsx] = [
      await bodiesOf(FILES[0]!),
      await bodiesOf(FILES[1]!),
      await bodiesOf(FILES[2]!),
      await bodiesOf(FILES[3]!),
    ];
    expect(utf8).toHaveLength(3);
    // The UTF-8 run itself carries the letters and the amounts' digits as written.
    expect(utf8[0]).toContain('"recipient":"jürgen.müller@example.de"');
    expect(utf8[0]).toContain('"amount":0.10,');
    expect(utf8[1]).toContain('"amount":1234567.89,');
    expect(utf8[0]).toContain('"description":"Spesen 50€ Büro"');
    const bytes = (bodies: string[]) => bodies.map((b) => Buffer.from(b, 'utf8').toString('hex'));
    expect(bytes(german)).toEqual(bytes(utf8));
    expect(bytes(unicode)).toEqual(bytes(utf8));
    expect(bytes(xlsx)).toEqual(bytes(utf8));
  });
});
