import { describe, expect, it } from 'vitest';
import { formatProblem, InputError, UsageError } from '../../../src/errors.js';
import {
  detectDelimiter,
  detectFormat,
  ProblemList,
  parseDelimiterOption,
  parseMapOption,
  readPayouts,
  templateText,
} from '../../../src/input/index.js';
import { CurrencyTable } from '../../../src/money/currencies.js';
import { intake, intakeFixture, memorySource } from './helpers.js';

describe('detectFormat', () => {
  it('takes the format from the extension, ignoring case', () => {
    expect(detectFormat('a.csv')).toBe('csv');
    expect(detectFormat('A.TSV')).toBe('csv');
    expect(detectFormat('dir.v2/export.txt')).toBe('csv');
    expect(detectFormat('p.json')).toBe('json');
    expect(detectFormat('p.ndjson')).toBe('ndjson');
    expect(detectFormat('p.JSONL')).toBe('ndjson');
  });

  it('prefers an explicit format', () => {
    expect(detectFormat('p.csv', 'json')).toBe('json');
    expect(detectFormat('-', 'ndjson')).toBe('ndjson');
  });

  it('asks for --format on standard input and unknown extensions', () => {
    expect(() => detectFormat('-')).toThrow(UsageError);
    expect(() => detectFormat('-')).toThrow(/--format csv, json, ndjson or xlsx/);
    expect(() => detectFormat('payouts')).toThrow(/extension \(there is none\)/);
    expect(() => detectFormat('payouts.dat')).toThrow(/"\.dat"/);
    expect(detectFormat('Book.XLSX')).toBe('xlsx');
    expect(() => detectFormat('book.xls')).toThrow(
      /save it as an Excel Workbook \(\.xlsx\) or as "CSV UTF-8"/,
    );
    expect(() => detectFormat('a.csv', 'xml' as never)).toThrow(/unknown format "xml"/);
  });

  it('makes readPayouts throw UsageError, not report, for an unknown format', async () => {
    await expect(
      readPayouts(
        memorySource('-', 'x'),
        { currencies: new CurrencyTable() },
        { payout() {}, problem() {}, warning() {} },
      ),
    ).rejects.toBeInstanceOf(UsageError);
  });
});

describe('parseDelimiterOption', () => {
  it('accepts comma, semicolon and tab in their spellings', () => {
    expect(parseDelimiterOption(',')).toBe(',');
    expect(parseDelimiterOption(';')).toBe(';');
    expect(parseDelimiterOption('\t')).toBe('\t');
    expect(parseDelimiterOption('\\t')).toBe('\t');
    expect(parseDelimiterOption('tab')).toBe('\t');
    expect(parseDelimiterOption('TAB')).toBe('\t');
    expect(parseDelimiterOption('semicolon')).toBe(';');
  });

  it('refuses anything else', () => {
    expect(() => parseDelimiterOption('|')).toThrow(UsageError);
    expect(() => parseDelimiterOption('')).toThrow(/use ",", ";" or "tab"/);
  });
});

describe('parseMapOption', () => {
  it('reads field=header pairs, quotes optional, commas inside quotes kept', () => {
    expect(parseMapOption('amount=Betrag,reference_id=Ref')).toEqual({
      amount: 'Betrag',
      reference_id: 'Ref',
    });
    expect(parseMapOption('amount="Betrag, EUR", Recipient = "Empfänger"')).toEqual({
      amount: 'Betrag, EUR',
      recipient: 'Empfänger',
    });
  });

  it('names the bad part', () => {
    expect(() => parseMapOption('amount=Betrag,ref')).toThrow(/"ref" has no "="/);
    expect(() => parseMapOption('amout=Betrag')).toThrow(
      /"amout=Betrag" names no payout field: the fields are reference_id, amount/,
    );
    expect(() => parseMapOption('amount=')).toThrow(/"amount=" has no header name/);
    expect(() => parseMapOption('amount=a,amount=b')).toThrow(/amount is given twice/);
    expect(() => parseMapOption('amount=x,currency=X')).toThrow(
      /amount and currency would both read the column "x"/,
    );
    expect(() => parseMapOption('reference_id=amount')).toThrow(UsageError);
  });

  it('lets a mapped field leave its own name to another field', () => {
    expect(parseMapOption('reference_id=amount,amount=sum')).toEqual({
      reference_id: 'amount',
      amount: 'sum',
    });
  });
});

describe('detectDelimiter', () => {
  const b = (s: string) => Buffer.from(s);
  it('picks the most frequent of , ; tab outside quotes on the header line', () => {
    expect(detectDelimiter(b('a;b;c,d\n'), false)).toBe(';');
    expect(detectDelimiter(b('"a,b,c";d;e\n1,2,3,4,5\n'), false)).toBe(';');
    expect(detectDelimiter(b('a\tb\tc\n'), false)).toBe('\t');
    expect(detectDelimiter(b('a,b;c\n'), false)).toBe(',');
    expect(detectDelimiter(b('\ufeffa;b\r\n'), false)).toBe(';');
  });

  it('skips blank lines before the header and waits for the end of the line', () => {
    expect(detectDelimiter(b('\n  \r\na;b\n'), false)).toBe(';');
    expect(detectDelimiter(b('a;b'), false)).toBeUndefined();
    expect(detectDelimiter(b('a;b'), true)).toBe(';');
    expect(detectDelimiter(b(''), true)).toBe(',');
  });
});

describe('templateText', () => {
  it('writes a CSV header with the documented columns and one example row', () => {
    const lines = templateText('csv').trimEnd().split('\n');
    expect(lines[0]).toBe('reference_id,amount,currency,recipient,description');
    expect(lines).toHaveLength(2);
  });

  it('writes a JSON create request with batch_reference and one payout', () => {
    const doc = JSON.parse(templateText('json'));
    expect(Object.keys(doc)).toEqual(['batch_reference', 'payouts']);
    expect(Object.keys(doc.payouts[0])).toEqual([
      'reference_id',
      'amount',
      'currency',
      'recipient',
      'description',
    ]);
  });

  it('writes templates that read back as one valid payout each', async () => {
    for (const [format, name] of [
      ['csv', 't.csv'],
      ['json', 't.json'],
      ['ndjson', 't.ndjson'],
    ] as const) {
      const r = await intake(memorySource(name, templateText(format)));
      expect(r.problems).toEqual([]);
      expect(r.payouts).toHaveLength(1);
      expect(r.payouts[0]).toMatchObject({
        reference_id: 'payout-0001',
        amount: { text: '12.50' },
        currency: 'USD',
      });
    }
  });
});

describe('ProblemList', () => {
  it('shows the first 50 problems of a file with 60 and counts the other 10', async () => {
    const r = await intakeFixture('sixty-problems.csv');
    expect(r.problems).toHaveLength(60);
    const list = new ProblemList();
    for (const p of r.problems) list.add(p);
    expect(list.total).toBe(60);
    expect(list.shown).toHaveLength(50);
    expect(list.shown[0]!.location).toBe('line 2');
    expect(list.shown[49]!.location).toBe('line 51');
    const err = list.toError();
    expect(err).toBeInstanceOf(InputError);
    expect(err.problems).toHaveLength(50);
    expect(err.totalProblems).toBe(60);
    expect(err.problems.length - err.totalProblems).toBe(-10);
    expect(err.message).toBe('60 problems in the input; nothing was sent');
    expect(formatProblem(err.problems[0]!)).toBe(
      'sixty-problems.csv line 2: amount "1,234.56": remove the thousands separators: use a plain decimal such as 1234.56',
    );
  });

  it('takes another limit', () => {
    const list = new ProblemList(2);
    for (let i = 0; i < 5; i++) list.add({ file: 'f', message: `m${i}` });
    expect(list.shown.map((p) => p.message)).toEqual(['m0', 'm1']);
    expect(list.total).toBe(5);
  });
});
