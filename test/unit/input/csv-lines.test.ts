import { describe, expect, it } from 'vitest';
import { HEADER, intakeCsv } from './helpers.js';

/** Line breaks in a text, a CRLF counting once, as people count lines. */
function breaks(text: string): number {
  return text.match(/\r\n|\r|\n/g)?.length ?? 0;
}

describe('CSV line numbers', () => {
  it('gives each row the line it starts on, whatever line breaks its quoted fields hold', async () => {
    let seed = 7;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const inner = ['\n', '\r\n', '\r', '\n\n', ' '];
    for (const eol of ['\n', '\r\n', '\r']) {
      let text = `\ufeff${HEADER}${eol}`;
      const expected: Array<[string, string]> = [];
      // Rows whose recipient or description holds a line break are refused, by their first line.
      const refused: string[] = [];
      for (let i = 1; i <= 60; i++) {
        if (rand(5) === 0) text += eol; // a blank line
        const ref = `R${i}`;
        const line = `line ${breaks(text) + 1}`;
        const description =
          rand(2) === 0
            ? `"a${inner[rand(inner.length)]}b, ""c"""`
            : rand(2) === 0
              ? '"q"'
              : 'plain';
        const recipient = rand(4) === 0 ? `"r${inner[rand(inner.length)]}s"` : 'r@x.com';
        text += `${ref},1.00,USD,${recipient},${description}${eol}`;
        if (/[\r\n]/.test(recipient + description)) refused.push(line);
        else expected.push([ref, line]);
      }
      for (const size of [1, 2, 5, 64, 65536]) {
        const r = await intakeCsv(text, {}, size);
        expect(r.payouts.map((p) => [p.reference_id, p.location])).toEqual(expected);
        expect([...new Set(r.problems.map((p) => p.location))]).toEqual(refused);
      }
    }
  });

  it('numbers problems after quoted line breaks by the line their row starts on', async () => {
    const text = `${HEADER}\n"A\r\n",1.00,USD,a,"x\ry"\nB,0,USD,b,"p\r\n\nq"\nC,x,USD,c,\n`;
    for (const size of [1, 3, 65536]) {
      const r = await intakeCsv(text, {}, size);
      expect([...new Set(r.problems.map((p) => p.location))]).toEqual([
        'line 2',
        'line 5',
        'line 8',
      ]);
    }
  });
});
