import { describe, expect, it } from 'vitest';
import { foldedReference, referenceProblem } from '../../../src/input/reference.js';
import { HEADER, intake, intakeCsv, memorySource } from './helpers.js';

/** The reference the status endpoint would see for `ref`, after the URL is parsed. */
function readBack(ref: string): string {
  const url = new URL(`https://service.example/api/v1/payouts/${encodeURIComponent(ref)}`);
  return decodeURIComponent(url.pathname.slice('/api/v1/payouts/'.length));
}

const ORDINARY = [
  'payout-0001',
  'Zahlung-Ä1',
  'DE 3',
  '注文-7',
  'emoji-😀',
  '...',
  '.hidden',
  'a/b',
  '%2e%2e',
  '?x#y',
  "'=quoted",
  'DE\u200B-3',
];

describe('referenceProblem', () => {
  it('accepts ordinary references, each of which reads back as itself', () => {
    for (const ref of ORDINARY) {
      expect(referenceProblem(ref), ref).toBeUndefined();
      expect(readBack(ref)).toBe(ref);
    }
  });

  it('refuses "." and "..", which the URL turns into the list endpoint or its parent', () => {
    expect(readBack('.')).toBe('');
    expect(referenceProblem('.')?.reason).toMatch(/this folder in a URL path/);
    expect(referenceProblem('..')?.reason).toMatch(/the parent folder in a URL path/);
    expect(referenceProblem('..')?.fix).toMatch(/such as payout-0001/);
  });

  it('refuses C0 controls, DEL and C1 controls, naming the character and where it is', () => {
    expect(referenceProblem('a\tb')?.reason).toMatch(/U\+0009 CHARACTER TABULATION at character 2/);
    expect(referenceProblem('\x1b[31mX')?.reason).toMatch(/U\+001B ESCAPE at character 1/);
    expect(referenceProblem('Ä\x00')?.reason).toMatch(/U\+0000 NULL at character 2/);
    expect(referenceProblem('x\x7f')?.reason).toMatch(/U\+007F DELETE/);
    expect(referenceProblem('😀\u0085')?.reason).toMatch(/U\+0085 NEXT LINE at character 2/);
    expect(referenceProblem('\u009b1m')?.reason).toMatch(/U\+009B/);
    for (let c = 0; c <= 0x9f; c = c === 0x1f ? 0x7f : c + 1) {
      expect(referenceProblem(`a${String.fromCharCode(c)}b`), `U+${c}`).toBeDefined();
    }
    expect(referenceProblem('a\tb')?.fix).toBe('remove it');
  });

  it('refuses a lone surrogate, which encodeURIComponent cannot encode', () => {
    expect(() => encodeURIComponent('a\uD800')).toThrow(URIError);
    expect(referenceProblem('a\uD800')?.reason).toMatch(/U\+D800\) at character 2/);
    expect(referenceProblem('\uDC00x')?.reason).toMatch(/surrogate/);
  });

  it('refuses white space at either end, which status trims away', () => {
    for (const ref of [' a', 'a ', '\u00a0a', 'a\u3000', '\uFEFFa']) {
      expect(referenceProblem(ref)?.reason, JSON.stringify(ref)).toMatch(/white space/);
    }
    expect(referenceProblem('')?.reason).toBe('is empty');
  });
});

describe('foldedReference', () => {
  it('leaves plain ASCII alone and folds invisible characters and normalisation away', () => {
    expect(foldedReference('DE-3')).toBeUndefined();
    expect(foldedReference('DE\u200B-3')).toBe('DE-3');
    expect(foldedReference('\u202ADE-3\u00AD')).toBe('DE-3');
    expect(foldedReference('Ｄ\uFEFFＥ-3')).toBe('DE-3');
    expect(foldedReference('Zahlung-A\u03081')).toBe('Zahlung-Ä1');
    expect(foldedReference('Zahlung-Ä1')).toBe('Zahlung-Ä1');
  });
});

describe('intake refuses references that cannot be read back', () => {
  it('lists each row, with the value escaped, and keeps the rows apart from the valid ones', async () => {
    const r = await intakeCsv(
      `${HEADER}\n.,1.00,USD,a@x,\nok-1,1.00,USD,a@x,\n..,1.00,USD,a@x,\n"a\tb",1.00,USD,a@x,\n\x1b[31mX,1.00,USD,a@x,\nX\x7f,1.00,USD,a@x,\nY\u009b,1.00,USD,a@x,\n`,
    );
    expect(r.payouts.map((p) => p.reference_id)).toEqual(['ok-1']);
    expect(r.problems.every((p) => p.field === 'reference_id')).toBe(true);
    expect(r.lines).toEqual([
      'test.csv line 2: reference_id ".": means this folder in a URL path, so the payout could never be looked up by it: choose a reference with letters or digits, such as payout-0001',
      'test.csv line 4: reference_id "..": means the parent folder in a URL path, so the payout could never be looked up by it: choose a reference with letters or digits, such as payout-0001',
      'test.csv line 5: reference_id "a\\tb": holds the control character U+0009 CHARACTER TABULATION at character 2; a reference must be visible text to be looked up again: remove it',
      'test.csv line 6: reference_id "\\x1b[31mX": holds the control character U+001B ESCAPE at character 1; a reference must be visible text to be looked up again: remove it',
      'test.csv line 7: reference_id "X\\x7f": holds the control character U+007F DELETE at character 2; a reference must be visible text to be looked up again: remove it',
      'test.csv line 8: reference_id "Y\\x9b": holds the control character U+009B CONTROL SEQUENCE INTRODUCER at character 2; a reference must be visible text to be looked up again: remove it',
    ]);
    for (const line of r.lines) expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });

  it('refuses a lone surrogate written as a JSON escape', async () => {
    const r = await intake(
      memorySource(
        'p.json',
        '[{"reference_id": "A\\ud800", "amount": "1", "currency": "USD", "recipient": "a@x"}]',
      ),
    );
    expect(r.payouts).toEqual([]);
    expect(r.lines).toEqual([
      'p.json item 1: reference_id "A\\ud800": holds half of a UTF-16 surrogate pair (U+D800) at character 2, which is not a character and cannot be put in a URL: write the whole character, or remove the \\u escape',
    ]);
  });

  it('accepts non-ASCII letters', async () => {
    const r = await intakeCsv(`${HEADER}\nZahlung-Ä1,1.00,EUR,a@x,\n`);
    expect(r.problems).toEqual([]);
    expect(r.payouts[0]!.reference_id).toBe('Zahlung-Ä1');
  });
});
