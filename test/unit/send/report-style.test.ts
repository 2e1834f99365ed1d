import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  amountCell,
  amountHeader,
  type CsvRead,
  historyStyleOf,
  PLAIN_STYLE,
  parseReportLocale,
  reportStyleOf,
  storedStyle,
  styleFromHistory,
  styleText,
} from '../../../src/core/report-style.js';
import { writeFailedOut, writeReport } from '../../../src/core/send/report.js';
import { fileSource, readPayouts, type ValidPayout } from '../../../src/input/index.js';
import { CurrencyTable } from '../../../src/money/currencies.js';
import type { ReportRow } from '../../../src/state/index.js';
import { tempHome } from '../../helpers/cli.js';

const GERMAN = { delimiter: ';', decimalComma: true };
const read = (file: string, delimiter: string, decimalComma: boolean): CsvRead => ({
  file,
  delimiter,
  decimalComma,
});

describe('--report-locale', () => {
  it('reads a language, with or without its region', () => {
    expect(parseReportLocale('de')).toEqual(GERMAN);
    expect(parseReportLocale('de-DE')).toEqual(GERMAN);
    expect(parseReportLocale(' FR_fr ')).toEqual(GERMAN);
    expect(parseReportLocale('nl')).toEqual(GERMAN);
    expect(parseReportLocale('en-GB')).toEqual(PLAIN_STYLE);
  });

  it('refuses a language it does not know, listing those it does', () => {
    expect(() => parseReportLocale('sv')).toThrow(
      /--report-locale "sv" is not one this tool knows: use de, fr, es, it, nl, en/,
    );
  });
});

describe('the style of a run', () => {
  it('follows the CSV files as they were read', () => {
    expect(reportStyleOf({}, [read('Auszahlungen.csv', ';', true)])).toEqual({
      style: GERMAN,
      source: { kind: 'input', file: 'Auszahlungen.csv' },
    });
    // A ";" file with decimal points is written as it was read.
    expect(reportStyleOf({}, [read('a.csv', ';', false)]).style).toEqual({
      delimiter: ';',
      decimalComma: false,
    });
  });

  it('is "," and a point for plain CSV, no CSV, or files read in different conventions', () => {
    const plain = { style: PLAIN_STYLE, source: { kind: 'default' } };
    expect(reportStyleOf({}, [read('a.csv', ',', false)])).toEqual(plain);
    expect(reportStyleOf({}, [])).toEqual(plain);
    expect(reportStyleOf({}, [read('a.csv', ';', true), read('b.csv', ',', false)])).toEqual(plain);
  });

  it('takes --report-locale over the files, and --report-delimiter for the delimiter alone', () => {
    const german = [read('a.csv', ';', true)];
    expect(reportStyleOf({ locale: PLAIN_STYLE }, german)).toEqual({
      style: PLAIN_STYLE,
      source: { kind: 'locale' },
    });
    expect(reportStyleOf({ locale: GERMAN }, []).style).toEqual(GERMAN);
    expect(reportStyleOf({ delimiter: '\t' }, german).style).toEqual({
      delimiter: '\t',
      decimalComma: true,
    });
    expect(reportStyleOf({ delimiter: ';' }, []).style).toEqual({
      delimiter: ';',
      decimalComma: false,
    });
  });
});

describe('cells and words', () => {
  it('writes an amount with the decimal mark, digits unchanged', () => {
    expect(amountCell('6105.84', GERMAN)).toBe('6105,84');
    expect(amountCell('1000', GERMAN)).toBe('1000');
    expect(amountCell('0.125', GERMAN)).toBe('0,125');
    expect(amountCell('6105.84', PLAIN_STYLE)).toBe('6105.84');
    expect(amountHeader('amount', GERMAN)).toBe('amount (decimal comma)');
    expect(amountHeader('amount', PLAIN_STYLE)).toBe('amount');
  });

  it('says how a file was written, and why', () => {
    expect(styleText(GERMAN, { kind: 'input', file: 'Auszahlungen.csv' })).toBe(
      '";"-separated, decimal comma, UTF-8 with a byte-order mark, as Auszahlungen.csv was read',
    );
    expect(styleText(PLAIN_STYLE, { kind: 'default' }, 'utf8')).toBe(
      '","-separated, decimal point, UTF-8',
    );
    expect(styleText({ delimiter: '\t', decimalComma: true }, { kind: 'locale' })).toBe(
      'tab-separated, decimal comma, UTF-8 with a byte-order mark, as --report-locale says',
    );
    expect(styleText(GERMAN, { kind: 'run', runId: '3f2a9c0d1e4b5a6c' })).toContain(
      ', as the files of run 3f2a9c0d1e4b5a6c were read',
    );
  });
});

describe('the style kept with a run', () => {
  it('goes into the history and comes back', () => {
    expect(storedStyle(GERMAN)).toBe('{"delimiter":";","decimal_mark":","}');
    expect(styleFromHistory(storedStyle(GERMAN))).toEqual(GERMAN);
    expect(styleFromHistory(storedStyle({ delimiter: '\t', decimalComma: false }))).toEqual({
      delimiter: '\t',
      decimalComma: false,
    });
    for (const bad of [null, undefined, '', 'not json', '{"delimiter":"|"}'])
      expect(styleFromHistory(bad)).toBeUndefined();
  });

  it("writes a run's retry file as its files were read, unless --report-locale says otherwise", () => {
    const run = { run_id: 'r1', csv_style: storedStyle(GERMAN) };
    expect(historyStyleOf(undefined, run)).toEqual({
      style: GERMAN,
      source: { kind: 'run', runId: 'r1' },
    });
    expect(historyStyleOf(PLAIN_STYLE, run).source).toEqual({ kind: 'locale' });
    // Recorded before runs kept it, or plain: "," and a point, said as the default.
    expect(historyStyleOf(undefined, { run_id: 'r0', csv_style: null })).toEqual({
      style: PLAIN_STYLE,
      source: { kind: 'default' },
    });
  });
});

describe('German reports, written and read back', () => {
  const homes: Array<{ cleanup(): void }> = [];
  afterEach(() => {
    for (const h of homes.splice(0)) h.cleanup();
  });
  const currencies = new CurrencyTable();
  const rows: ReportRow[] = [
    {
      file: 'Auszahlungen.csv',
      location: 'line 2',
      reference_id: 'DE-1',
      amount: '6105.84',
      currency: 'EUR',
      recipient: 'felix@example.de',
      description: 'Gehalt Dezember Felix Höß',
      outcome: {
        reference_id: 'DE-1',
        status: 'success',
        amount: '6105.84',
        currency: 'EUR',
        transaction_id: 'T-1',
        charges: 61.06,
      },
    },
    {
      file: 'Auszahlungen.csv',
      location: 'line 3',
      reference_id: 'DE-2',
      amount: '1234.5',
      currency: 'EUR',
      recipient: 'anna@example.de',
      description: 'Miete; Januar',
      outcome: {
        reference_id: 'DE-2',
        status: 'failed',
        amount: '1234.5',
        currency: 'EUR',
        charges: 0,
        message: 'Account closed',
      },
    },
  ];

  it('writes ";", decimal commas in amounts and charges, and a header that says so', async () => {
    const h = tempHome();
    homes.push(h);
    const path = join(h.dir, 'report.csv');
    await writeReport(path, rows, currencies, { style: GERMAN });
    expect(readFileSync(path, 'utf8')).toBe(
      '\ufefffile;line;reference_id;amount (decimal comma);currency;recipient;description;status;transaction_id;charges (decimal comma);message;sent_earlier;retried_as\r\n' +
        'Auszahlungen.csv;2;DE-1;6105,84;EUR;felix@example.de;Gehalt Dezember Felix Höß;success;T-1;61,06;;;\r\n' +
        'Auszahlungen.csv;3;DE-2;1234,5;EUR;anna@example.de;"Miete; Januar";failed;;0,00;Account closed;;\r\n',
    );
  });

  it('writes a retry file that `payouts send` reads back without flags', async () => {
    const h = tempHome();
    homes.push(h);
    const path = join(h.dir, 'retry.csv');
    expect(await writeFailedOut(path, rows, { style: GERMAN })).toBe(1);
    expect(readFileSync(path, 'utf8')).toBe(
      '\ufeffreference_id;new_reference_id;amount (decimal comma);currency;recipient;description\r\n' +
        'DE-2;;1234,5;EUR;anna@example.de;"Miete; Januar"\r\n',
    );
    const payouts: ValidPayout[] = [];
    const problems: unknown[] = [];
    const meta = await readPayouts(
      fileSource(path, 'retry.csv'),
      { currencies },
      { payout: (p) => payouts.push(p), problem: (p) => problems.push(p), warning() {} },
    );
    expect(problems).toEqual([]);
    expect(payouts.map((p) => [p.reference_id, p.amount.text, p.description])).toEqual([
      ['DE-2', '1234.5', 'Miete; Januar'],
    ]);
    expect(meta.csv).toEqual(GERMAN);
  });

  it('quotes a decimal comma where "," separates the cells', async () => {
    const h = tempHome();
    homes.push(h);
    const path = join(h.dir, 'retry.csv');
    await writeFailedOut(path, rows, { style: { delimiter: ',', decimalComma: true } });
    expect(readFileSync(path, 'utf8')).toContain('DE-2,,"1234,5",EUR,');
    const payouts: ValidPayout[] = [];
    await readPayouts(
      fileSource(path, 'retry.csv'),
      { currencies },
      { payout: (p) => payouts.push(p), problem() {}, warning() {} },
    );
    expect(payouts.map((p) => p.amount.text)).toEqual(['1234.5']);
  });
});
