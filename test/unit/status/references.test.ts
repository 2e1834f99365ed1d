import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  isReferenceHeader,
  parseReferenceText,
  readReferenceFile,
} from '../../../src/core/status/reference-file.js';
import { combineReferences, gatherReferences } from '../../../src/core/status/references.js';
import { UsageError } from '../../../src/errors.js';
import { fixture } from '../../helpers/cli.js';

/** A stdin stream holding `text`. */
function stdinOf(text: string): PassThrough {
  const s = new PassThrough();
  s.end(text);
  return s;
}

const ctx = { cwd: fixture('status'), stdin: stdinOf('') };

describe('parseReferenceText', () => {
  it('reads a plain list, skipping blank lines and # comments, trimming each line', () => {
    expect(parseReferenceText('# head\npo-1\n\n  po-2 \r\n#x\npo-3', 'f')).toEqual([
      'po-1',
      'po-2',
      'po-3',
    ]);
  });

  it('reads the reference_id column of a comma CSV, skipping empty cells', () => {
    const text = 'line,reference_id,status\n1,po-1,success\n2,"po-2",failed\n3,,failed\n';
    expect(parseReferenceText(text, 'r.csv')).toEqual(['po-1', 'po-2']);
  });

  it('matches the header ignoring case and spaces, with ; or tab as delimiter', () => {
    expect(parseReferenceText('x;Reference ID\n1;a\n2;b\n', 'f')).toEqual(['a', 'b']);
    expect(parseReferenceText('REFERENCE_ID\tstatus\na\tsuccess\n', 'f')).toEqual(['a']);
    expect(parseReferenceText('\uFEFF"reference_id"\na\nb\n', 'f')).toEqual(['a', 'b']);
  });

  it('keeps a quoted cell holding the delimiter whole', () => {
    expect(parseReferenceText('reference_id,note\n"a,b",x\n', 'f')).toEqual(['a,b']);
  });

  it('refuses a CSV without a reference_id column, naming the file and line', () => {
    expect(() => parseReferenceText('# c\namount,currency\n1,USD\n', 'pay.csv')).toThrow(
      /pay\.csv line 2: .*no reference_id column/,
    );
  });

  it('reports a broken CSV as a usage error', () => {
    expect(() => parseReferenceText('reference_id,x\n"a,b\n', 'bad.csv')).toThrow(UsageError);
  });

  it("tells a quote never closed by the line and column where it opens, not in the parser's words", () => {
    const said = (text: string, name: string) => {
      try {
        parseReferenceText(text, name);
      } catch (err) {
        return (err as Error).message;
      }
      return '';
    };
    const comma = said('# exported\nreference_id,x\na,1\n"b,2\nc,3\n', 'r.csv');
    expect(comma).toBe(
      'r.csv line 4, column 1: the quote (") that opens this cell is never closed, so the rest of the file would be one cell: close it with another quote, or remove it',
    );
    expect(said('status;reference_id\nok;a\nok;"b\nok;c\n', 's.csv')).toMatch(
      /^s\.csv line 3, column 2: the quote/,
    );
    for (const text of [comma]) expect(text).not.toMatch(/Quote Not Closed|parsing/);
  });

  it('returns nothing for an empty or comment-only file', () => {
    expect(parseReferenceText('', 'f')).toEqual([]);
    expect(parseReferenceText('# only\n\n', 'f')).toEqual([]);
  });
});

describe('isReferenceHeader', () => {
  it('accepts the spellings of reference_id and nothing else', () => {
    for (const h of [
      'reference_id',
      ' Reference_ID ',
      'reference id',
      'Reference-Id',
      'referenceId',
    ]) {
      expect(isReferenceHeader(h)).toBe(true);
    }
    for (const h of ['reference', 'ref_id', 'transaction_id'])
      expect(isReferenceHeader(h)).toBe(false);
  });
});

describe('readReferenceFile', () => {
  it('reads fixtures relative to the working folder', async () => {
    await expect(readReferenceFile('refs.txt', ctx)).resolves.toEqual(['po-1', 'po-2', 'po-1']);
    await expect(readReferenceFile('semicolon.csv', ctx)).resolves.toEqual(['po-10', 'po-11']);
    await expect(readReferenceFile('report.csv', ctx)).resolves.toEqual(['po-20', 'po-21']);
  });

  it('reads standard input for "-"', async () => {
    await expect(readReferenceFile('-', { cwd: '/', stdin: stdinOf('a\nb\n') })).resolves.toEqual([
      'a',
      'b',
    ]);
  });

  it('refuses a CSV fixture without a reference_id column', async () => {
    await expect(readReferenceFile('no-ref-column.csv', ctx)).rejects.toThrow(
      /no-ref-column\.csv line 1: .*no reference_id column/,
    );
  });

  it('names a missing file', async () => {
    await expect(readReferenceFile('nope.txt', ctx)).rejects.toThrow(
      '--from nope.txt: no such file',
    );
  });
});

describe('combineReferences / gatherReferences', () => {
  it('de-duplicates keeping the first position, arguments first', () => {
    expect(combineReferences(['b', 'a'], ['a', 'c', 'b'])).toEqual(['b', 'a', 'c']);
  });

  it('refuses references that cannot be a URL path segment', () => {
    expect(() => combineReferences(['..'])).toThrow(UsageError);
    expect(() => combineReferences(['a\u0007b'])).toThrow(/control character/);
  });

  it('combines arguments with several files', async () => {
    const refs = await gatherReferences(['po-2', 'x'], ['refs.txt', 'report.csv'], ctx);
    expect(refs).toEqual(['po-2', 'x', 'po-1', 'po-20', 'po-21']);
  });

  it('needs at least one reference', async () => {
    await expect(gatherReferences([], [], ctx)).rejects.toThrow(/at least one reference_id/);
    await expect(
      gatherReferences([], ['-'], { cwd: '/', stdin: stdinOf('# nothing\n') }),
    ).rejects.toThrow(/no references found in -/);
  });

  it('accepts standard input only once', async () => {
    await expect(gatherReferences([], ['-', '-'], ctx)).rejects.toThrow(/only once/);
  });
});
