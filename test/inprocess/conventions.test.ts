import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock, runMain } from '../helpers/main.js';
import { STORES, storeEnv } from '../helpers/pg.js';
import { testService } from '../helpers/sandbox.js';

// Issue 49.1: a German Excel export is sent, reported and retried in its own conventions.
// Its report opens in the German spreadsheet that wrote the export with every amount a
// number: cells separated by ";" and amounts written 6105,84 (what LibreOffice Calc, de-DE,
// ";", reads as numbers; "6105.84" it reads as text). Asserted on the bytes: the suite needs
// no spreadsheet. DE-2's description starts as a formula guard and a formula would: the
// files written for a spreadsheet guard it (issue 52), and reading a retry file back undoes
// the guard exactly once.

/** DE-2's description, and the cell that holds it in every file written for a spreadsheet. */
const FORMULA_LIKE = "'=Gehalt Dezember Anna";
const GUARDED = "''=Gehalt Dezember Anna";

const services: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const s of services.splice(0)) await s.close();
});

/** As German Excel saves "CSV": Windows-1252, ";", decimal commas, German headers, CRLF. */
const EXPORT =
  'Referenz;Betrag;Währung;Empfänger;Verwendungszweck\r\n' +
  'DE-1;6.105,84;EUR;felix.hoess@example.de;Gehalt Dezember Felix Höß\r\n' +
  "DE-2;3.061,76;EUR;anna@example.de;'=Gehalt Dezember Anna\r\n" +
  'DE-3;12,50;EUR;max@example.de;Spesen\r\n';

const FLAGS = [
  '--encoding',
  'windows-1252',
  '--decimal-comma',
  '--map',
  'reference_id=Referenz,amount=Betrag,currency=Währung,recipient=Empfänger,description=Verwendungszweck',
];

/** The cells of a CSV written with ";" and CRLF, after its byte-order mark. */
function cells(text: string): string[][] {
  expect(text.startsWith('\ufeff')).toBe(true);
  return text
    .slice(1)
    .split('\r\n')
    .filter((l) => l !== '')
    .map((l) => l.split(';'));
}

/** A number as a German spreadsheet reads one: digits, then a decimal comma and digits. */
const GERMAN_NUMBER = /^\d+(,\d+)?$/;

/** The values of a column, by the name its header gives it. */
function column(rows: string[][], name: string): string[] {
  const i = rows[0]!.indexOf(name);
  expect(i, `${name} in ${rows[0]!.join(';')}`).toBeGreaterThanOrEqual(0);
  return rows.slice(1).map((r) => r[i]!);
}

describe.each(STORES)('a German export in its own conventions (%s)', (store) => {
  const withStore = storeEnv(store, { migrated: true });

  it('is sent, reported and retried without a flag, in ";" and decimal commas', async () => {
    // DE-2's bank refuses it; its retry, under a new reference to the same account, is paid.
    const svc = await testService({ triggers: [{ match: 'ref=DE-2', status: 'failed' }] });
    services.push(svc);
    const env = withStore(svc.env);
    const run = (args: string[]) => runMain(args, { env, clock: new FakeClock() });
    const dir = svc.home.dir;
    const file = join(dir, 'Auszahlungen.csv');
    writeFileSync(file, Buffer.from(EXPORT, 'latin1'));
    const report = join(dir, 'report.csv');
    const retry = join(dir, 'retry.csv');

    const sent = await run([
      'send',
      file,
      ...FLAGS,
      '--yes',
      '--report',
      report,
      '--failed-out',
      retry,
    ]);
    expect(sent.code).toBe(4);
    expect(sent.stderr).toContain(
      `Report written to ${report}: ";"-separated, decimal comma, UTF-8 with a byte-order mark, as ${file} was read`,
    );
    expect(sent.stderr).toContain(`1 row known not to be paid written to ${retry} (as the report)`);

    const rows = cells(readFileSync(report, 'utf8'));
    expect(rows[0]).toEqual([
      'file',
      'line',
      'reference_id',
      'amount (decimal comma)',
      'currency',
      'recipient',
      'description',
      'status',
      'transaction_id',
      'charges (decimal comma)',
      'message',
      'sent_earlier',
      'retried_as',
    ]);
    expect(column(rows, 'amount (decimal comma)')).toEqual(['6105,84', '3061,76', '12,50']);
    expect(column(rows, 'charges (decimal comma)')).toEqual(['61,06', '0,00', '0,13']);
    // Every amount and charge is a number in de-DE; every row has the header's cells.
    for (const name of ['amount (decimal comma)', 'charges (decimal comma)']) {
      for (const v of column(rows, name)) expect(v).toMatch(GERMAN_NUMBER);
    }
    expect(rows.every((r) => r.length === rows[0]!.length)).toBe(true);
    expect(column(rows, 'description').slice(0, 2)).toEqual(['Gehalt Dezember Felix Höß', GUARDED]);
    // Support reads the report back as it is.
    const looked = await run(['status', '--from', report, '--json']);
    expect(looked.code).toBe(4);
    expect(JSON.parse(looked.stdout).reference_count).toBe(3);

    // The retry file, filled in as finance would, is sent with no flag at all.
    const retryText = readFileSync(retry, 'utf8');
    expect(retryText).toBe(
      '\ufeffreference_id;new_reference_id;amount (decimal comma);currency;recipient;description\r\n' +
        `DE-2;;3061,76;EUR;anna@example.de;${GUARDED}\r\n`,
    );
    writeFileSync(retry, retryText.replace('DE-2;;', 'DE-2;DE-2-R1;'));
    const retryReport = join(dir, 'retry.report.csv');
    const again = await run(['send', retry, '--yes', '--report', retryReport]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain(`as ${retry} was read`);
    const paid = cells(readFileSync(retryReport, 'utf8'));
    expect(column(paid, 'reference_id')).toEqual(['DE-2-R1']);
    expect(column(paid, 'amount (decimal comma)')).toEqual(['3061,76']);
    expect(column(paid, 'status')).toEqual(['success']);
    // Sent as the export said it, guarded once again in its report.
    expect(column(paid, 'description')).toEqual([GUARDED]);
    const retried = await run(['status', 'DE-2-R1', '--json']);
    expect(JSON.stringify(JSON.parse(retried.stdout))).toContain(JSON.stringify(FORMULA_LIKE));
  });

  it("writes a run's retry file later in the conventions its files were read in", async () => {
    const svc = await testService({ triggers: [{ match: 'ref=DE-2', status: 'failed' }] });
    services.push(svc);
    const env = withStore(svc.env);
    const run = (args: string[]) => runMain(args, { env, clock: new FakeClock() });
    const file = join(svc.home.dir, 'Auszahlungen.csv');
    writeFileSync(file, Buffer.from(EXPORT, 'latin1'));
    const sent = await run(['send', file, ...FLAGS, '--yes', '--json']);
    expect(sent.code).toBe(4);
    const runId = (JSON.parse(sent.stdout) as { run_id: string }).run_id;

    const out = join(svc.home.dir, 'later.csv');
    const shown = await run(['runs', 'show', runId, '--failed-out', out]);
    expect(shown.code).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe(
      '\ufeffreference_id;new_reference_id;amount (decimal comma);currency;recipient;description\r\n' +
        `DE-2;;3061,76;EUR;anna@example.de;${GUARDED}\r\n`,
    );
    expect(shown.stderr).toContain(
      `(";"-separated, decimal comma, UTF-8 with a byte-order mark, as the files of run ${runId} were read)`,
    );
    // Whoever opens it in an English spreadsheet says so.
    const english = await run([
      'runs',
      'show',
      runId,
      '--failed-out',
      out,
      '--report-locale',
      'en',
    ]);
    expect(english.code).toBe(0);
    expect(readFileSync(out, 'utf8')).toContain('DE-2,,3061.76,EUR,');
  });
});

describe('--report-locale', () => {
  it('writes a German report of a plain file, and refuses a language it does not know', async () => {
    const svc = await testService();
    services.push(svc);
    const run = (args: string[]) => runMain(args, { env: svc.env, clock: new FakeClock() });
    const file = join(svc.home.dir, 'plain.csv');
    writeFileSync(file, 'reference_id,amount,currency,recipient\nP-1,1234.5,EUR,p@example.com\n');
    const report = join(svc.home.dir, 'p.report.csv');
    const bad = await run(['send', file, '--yes', '--report', report, '--report-locale', 'xx']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--report-locale "xx" is not one this tool knows');
    expect((await svc.ledger()).size).toBe(0);
    const r = await run(['send', file, '--yes', '--report', report, '--report-locale', 'de-AT']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      '";"-separated, decimal comma, UTF-8 with a byte-order mark, as --report-locale says',
    );
    expect(column(cells(readFileSync(report, 'utf8')), 'amount (decimal comma)')).toEqual([
      '1234,5',
    ]);
  });
});
