import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { writeReport } from '../../../src/core/send/report.js';
import { parseReferenceText, readReferenceFile } from '../../../src/core/status/reference-file.js';
import { combineReferences } from '../../../src/core/status/references.js';
import { UsageError } from '../../../src/errors.js';
import { referenceProblem } from '../../../src/input/reference.js';
import { CurrencyTable } from '../../../src/money/currencies.js';
import { intake, memorySource } from '../input/helpers.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** What `payouts status REF` says about a reference: undefined when it would look it up. */
function statusRefusal(ref: string): string | undefined {
  try {
    combineReferences([ref]);
    return undefined;
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    return err.message;
  }
}

const REFS = [
  '.',
  '..',
  'a\u0007b',
  '\u001b[2J',
  'x\u007f',
  'y\u009b',
  'half\ud800',
  'payout-0001',
  'Zahlung-Ä1',
  '...',
  'DE\u200B-3',
];

describe('payouts status and send refuse the same references', () => {
  it('refuses an argument exactly when intake refuses the row, for the same reason', async () => {
    // JSON input carries every one of these exactly, a lone surrogate included.
    const rows = REFS.map((reference_id) => ({
      reference_id,
      amount: '1',
      currency: 'USD',
      recipient: 'a@x',
    }));
    const r = await intake(memorySource('p.json', JSON.stringify(rows)));
    for (const [i, ref] of REFS.entries()) {
      const problem = r.problems.find((p) => p.location === `item ${i + 1}`);
      const refusal = statusRefusal(ref);
      expect(refusal === undefined, JSON.stringify(ref)).toBe(problem === undefined);
      expect(refusal === undefined).toBe(referenceProblem(ref) === undefined);
      if (problem !== undefined) expect(problem.message).toContain(refusal!.split('": ')[1]);
    }
    expect(r.payouts.map((p) => p.reference_id)).toEqual([
      'payout-0001',
      'Zahlung-Ä1',
      '...',
      'DE\u200B-3',
    ]);
  });

  it('shows a refused argument escaped', () => {
    expect(statusRefusal('\u001b[2J')).toBe(
      'reference_id "\\x1b[2J": holds the control character U+001B ESCAPE at character 1; a reference must be visible text to be looked up again: remove it',
    );
    expect(statusRefusal('.')).toMatch(/^reference_id "\.": means this folder in a URL path/);
  });

  it('names the file and line of a refused reference in a --from list or CSV', () => {
    expect(() => parseReferenceText('# refs\npo-1\n.\n', 'refs.txt')).toThrow(
      /^refs\.txt line 3: reference_id "\.": means this folder/,
    );
    expect(() => parseReferenceText('reference_id,x\npo-1,1\n\n"a\nb",2\n', 'report.csv')).toThrow(
      /^report\.csv line 4: reference_id "a\\nb": holds the control character U\+000A/,
    );
    expect(() => parseReferenceText('status;reference_id\nok;"x\u0085"\n', 'r.csv')).toThrow(
      /^r\.csv line 2: reference_id "x\\x85": holds the control character U\+0085/,
    );
  });
});

describe('reading a report back', () => {
  it('looks up the references a report written by payouts send holds', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payouts-report-'));
    dirs.push(dir);
    const refs = ['=SUM(A1)', '+49-1', '-5', '@home', "'quoted", 'plain', 'comma,and "quote"'];
    const rows = refs.map((ref, i) => ({
      file: 'payouts.csv',
      location: `line ${i + 2}`,
      reference_id: ref,
      amount: '1.00',
      currency: 'EUR',
      recipient: 'a@example.com',
    }));
    const path = join(dir, 'report.csv');
    await writeReport(path, rows, new CurrencyTable());
    // The writer did guard them, so the test is of the round trip, not of plain cells.
    expect(readFileSync(path, 'utf8')).toContain(",'=SUM(A1),");
    const ctx = { cwd: dir, stdin: new PassThrough() };
    await expect(readReferenceFile('report.csv', ctx)).resolves.toEqual(refs);
  });
});
