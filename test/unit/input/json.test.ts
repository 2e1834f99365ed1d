import { describe, expect, it } from 'vitest';
import { intake, intakeFixture, memorySource } from './helpers.js';

/** Reads JSON text held in memory. */
function intakeJson(text: string | Buffer, chunkSize?: number) {
  return intake(memorySource('test.json', text, chunkSize));
}

/** Reads NDJSON text held in memory. */
function intakeNdjson(text: string | Buffer, chunkSize?: number) {
  return intake(memorySource('test.ndjson', text, chunkSize));
}

describe('JSON files', () => {
  it('reads an array of payouts, located by item', async () => {
    const r = await intakeFixture('array.json');
    expect(r.problems).toEqual([]);
    expect(r.meta).toEqual({ rows: 2 });
    expect(
      r.payouts.map((p) => [p.location, p.reference_id, p.amount.text, p.currency, p.description]),
    ).toEqual([
      ['item 1', 'J-1', '12.50', 'EUR', 'String amount'],
      ['item 2', 'J-2', '1000', 'JPY', undefined],
    ]);
  });

  it('reads a create request, returning batch_reference and webhook_url', async () => {
    const r = await intakeFixture('create-request.json');
    expect(r.problems).toEqual([]);
    expect(r.meta).toEqual({
      rows: 2,
      batch_reference: 'batch-2025-03',
      webhook_url: 'https://hooks.example.com/payouts',
    });
    expect(
      r.payouts.map((p) => [p.reference_id, p.amount.text, p.currency, p.description]),
    ).toEqual([
      ['CR-1', '5.25', 'USD', 'Größe ✓'],
      ['CR-2', '7', 'USD', undefined],
    ]);
    expect(r.warnings).toEqual([
      'create-request.json: ignoring key "note" in payouts: only reference_id, amount, currency, recipient, description are read',
    ]);
  });

  it('keeps the exact text of numeric amounts', async () => {
    const r = await intakeFixture('numeric-amounts.json');
    expect(r.payouts.map((p) => [p.reference_id, p.amount.text, p.amount.minor])).toEqual([
      ['N-1', '0.10', 10n],
      ['N-2', '1234567.89', 123456789n],
      ['N-3', '100.000', 100000n],
      ['1004', '12345678901234.50', 1234567890123450n],
    ]);
    expect(r.lines).toEqual([
      'numeric-amounts.json item 5: amount "1e3": write the number out in full, without an exponent, such as 1234.56',
      'numeric-amounts.json item 6: amount "123456789012345678": has more significant digits than a JSON number carries exactly (15 always fit): check the value',
      'numeric-amounts.json item 7: amount "-5": must be greater than 0: correct the amount, or remove the payout',
    ]);
  });

  it('reports invalid JSON once, at its line and column', async () => {
    const r = await intakeFixture('invalid.json');
    expect(r.lines).toEqual([
      'invalid.json line 3, column 3: is not valid JSON: expected "," or "]" after an array item: check the commas, quotes and brackets around there',
    ]);
    expect(r.payouts.map((p) => p.reference_id)).toEqual(['I-1']);
  });

  it('reports non-string values and non-object items, and every field of an item', async () => {
    const r = await intakeJson(
      JSON.stringify([
        { reference_id: 1.5, amount: true, currency: 840, recipient: ['x'], description: 7 },
        'not a payout',
        { reference_id: 'ok', amount: null, currency: 'USD' },
      ]),
    );
    expect(r.payouts).toEqual([]);
    expect(r.lines).toEqual([
      'test.json item 1: reference_id "1.5": must be a string, not a number: write it as "..."',
      'test.json item 1: amount "true": must be a string, not true or false: write it as "12.50" or 12.50',
      'test.json item 1: currency "840": must be a string, not a number: write it as "..."',
      'test.json item 1: recipient: must be a string, not an array: write it as "..."',
      'test.json item 1: description "7": must be a string, not a number',
      expect.stringMatching(
        /^test\.json item 2: is a string, not a payout: write an object such as \{/,
      ),
      'test.json item 3: amount: is empty: write the amount, such as 1234.56',
      "test.json item 3: recipient: is missing: write the recipient's e-mail address, telephone number or identifier",
    ]);
    expect(r.meta.rows).toBe(3);
  });

  it('says "no payouts in this file" for an empty array, empty payouts or an empty file', async () => {
    for (const text of ['[]', '{"payouts": []}', '', '  \n']) {
      const r = await intakeJson(text);
      expect(r.lines).toEqual(['test.json: no payouts in this file']);
    }
  });

  it('explains a create request without a payouts array', async () => {
    const r = await intakeJson('{"batch_reference": "b", "items": []}');
    expect(r.lines).toEqual([
      'test.json: has no "payouts" array: write either an array of payouts or an object {"payouts": [...]}',
    ]);
    expect(r.warnings).toEqual([
      'test.json: ignoring top-level key "items": only payouts, batch_reference and webhook_url are read',
    ]);
    const notArray = await intakeJson('{"payouts": {"a": 1}}');
    expect(notArray.lines).toEqual([
      'test.json: payouts: must be an array of payout objects, not an object',
    ]);
    const scalar = await intakeJson('42');
    expect(scalar.lines).toEqual([
      'test.json: must hold an array of payouts or an object {"payouts": [...]}',
    ]);
  });

  it('checks batch_reference and webhook_url types and the webhook scheme', async () => {
    const r = await intakeJson(
      '{"batch_reference": 5, "webhook_url": "ftp://x", "payouts": [{"reference_id":"a","amount":"1","currency":"USD","recipient":"r"}]}',
    );
    expect(r.lines).toEqual([
      'test.json: batch_reference "5": must be a string, not a number',
      'test.json: webhook_url "ftp://x": must be an http or https URL, such as https://example.com/hooks/payouts',
    ]);
  });

  it('refuses two values for one key, since either could be the amount', async () => {
    const r = await intakeJson(
      '[{"reference_id":"a","amount":"1","amount":"100","currency":"USD","recipient":"r"}]',
    );
    expect(r.payouts).toEqual([]);
    expect(r.lines).toEqual([
      'test.json line 1, column 35: is not valid JSON: the key "amount" appears twice in one object: check the commas, quotes and brackets around there',
    ]);
  });

  it('accepts a BOM and refuses non-UTF-8 bytes, with the line', async () => {
    const ok = await intakeJson(
      '\ufeff[{"reference_id":"a","amount":"1","currency":"USD","recipient":"r"}]',
    );
    expect(ok.problems).toEqual([]);
    expect(ok.payouts).toHaveLength(1);
    const bad = Buffer.concat([
      Buffer.from('[\n{"reference_id":"a","amount":"1","currency":"USD","recipient":"Ren'),
      Buffer.from([0xe9]),
      Buffer.from('"}]'),
    ]);
    const r = await intakeJson(bad, 4);
    expect(r.payouts).toEqual([]);
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]!.location).toBe('line 2');
    expect(r.problems[0]!.message).toMatch(
      /^not valid UTF-8 \(byte 0xE9 at offset 68\): if the file was written in Windows-1252 or ISO-8859-1, pass --encoding windows-1252; or save it with UTF-8 encoding$/,
    );
  });

  it('keeps "__proto__" as an ordinary ignored key', async () => {
    const r = await intakeJson(
      '[{"__proto__": {"amount": "999"}, "reference_id":"a","amount":"1","currency":"USD","recipient":"r"}]',
    );
    expect(r.payouts.map((p) => p.amount.text)).toEqual(['1']);
    expect(r.warnings[0]).toContain('"__proto__"');
  });
});

describe('NDJSON files', () => {
  it('reads one payout per line, counting blank lines, reporting bad lines and going on', async () => {
    const r = await intakeFixture('payouts.ndjson');
    expect(
      r.payouts.map((p) => [p.location, p.reference_id, p.amount.text, p.description]),
    ).toEqual([
      ['line 1', 'L-1', '1.50', undefined],
      ['line 3', 'L-2', '2.25', 'Zweite'],
      ['line 7', 'L-6', '6.00', undefined],
    ]);
    expect(r.lines).toEqual([
      'payouts.ndjson line 4: amount "abc": use a plain decimal such as 1234.56',
      'payouts.ndjson line 5: is not valid JSON at column 75: the text ends where a value was expected: write one JSON object per line',
      expect.stringMatching(/^payouts\.ndjson line 6: is an array, not a payout/),
    ]);
    expect(r.meta.rows).toBe(6);
  });

  it('gives the same result for any chunk size, with CRLF and multi-byte text', async () => {
    const text =
      '\ufeff{"reference_id":"a","amount":"1.00","currency":"EUR","recipient":"Zoë 🦄"}\r\n\r\n{"reference_id":"b","amount":2,"currency":"JPY","recipient":"日本"}';
    const whole = await intakeNdjson(text);
    expect(whole.problems).toEqual([]);
    expect(whole.payouts.map((p) => [p.location, p.recipient])).toEqual([
      ['line 1', 'Zoë 🦄'],
      ['line 3', '日本'],
    ]);
    for (const size of [1, 2, 5]) {
      const r = await intakeNdjson(text, size);
      expect(r.payouts).toEqual(whole.payouts);
      expect(r.problems).toEqual([]);
    }
  });

  it('says "no payouts in this file" when only blank lines', async () => {
    const r = await intakeNdjson('\n  \n');
    expect(r.lines).toEqual(['test.ndjson: no payouts in this file']);
  });
});
