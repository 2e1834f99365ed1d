import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// The tool prints amounts as "EUR 1,234.56" (docs/output.md, "Amounts"): a transcript or a
// quoted message in the docs showing "80.00 EUR" is no longer what anyone will see.

const ROOT = new URL('../../../', import.meta.url);
const FILES = [
  'README.md',
  ...readdirSync(new URL('docs/', ROOT))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The text of fenced blocks and `code spans`: what the docs show the tool printing. */
function shown(markdown: string): string[] {
  const fenced = [...markdown.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((m) => m[1] ?? '');
  const spans = [...markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/`([^`]+)`/g)].map(
    (m) => m[1] ?? '',
  );
  return [...fenced, ...spans];
}

describe('the docs show amounts as the tool prints them', () => {
  it('no transcript or quoted message writes the currency after the amount', () => {
    const old: string[] = [];
    for (const file of FILES) {
      for (const text of shown(readFileSync(new URL(file, ROOT), 'utf8'))) {
        for (const m of text.matchAll(/\b\d[\d,]*\.\d+ [A-Z]{3}\b/g)) old.push(`${file}: ${m[0]}`);
      }
    }
    expect(old).toEqual([]);
  });
});
