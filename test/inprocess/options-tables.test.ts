import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runMain } from '../helpers/main.js';

// Issue 49, item 6: the options tables of the docs list every option the command's --help
// lists, and nothing else, so a new option cannot be left out of them.

/** The options a command's --help lists (long names, or the short one alone), --help aside. */
async function helpOptions(command: string): Promise<string[]> {
  const r = await runMain([command, '--help']);
  expect(r.code).toBe(0);
  const section = r.stdout.slice(
    r.stdout.indexOf('Options:'),
    r.stdout.indexOf('\n\n', r.stdout.indexOf('Options:')),
  );
  const names = [...section.matchAll(/^ {2}(?:-\w, )?(--?[\w-]+)/gm)].map((m) => m[1]!);
  return names.filter((n) => n !== '--help').sort();
}

/**
 * The options a Markdown table lists: the first table after `heading`, each row's first cell
 * naming one or more (`--report-encoding`, `-y, --yes`).
 */
function tableOptions(file: string, heading: string): string[] {
  const text = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
  const from = text.indexOf(heading);
  expect(from, `${file} has no ${heading}`).toBeGreaterThanOrEqual(0);
  const lines = text.slice(from).split('\n');
  const start = lines.findIndex((l) => l.startsWith('|'));
  const rows: string[] = [];
  for (const l of lines.slice(start)) {
    if (!l.startsWith('|')) break;
    rows.push(l);
  }
  const firsts = rows.slice(2).map((r) => r.split('|')[1] ?? '');
  return firsts
    .flatMap((cell) => [...cell.matchAll(/`(?:-\w, )?(--[\w-]+)/g)].map((m) => m[1]!))
    .sort();
}

describe('the options tables', () => {
  it("README's `payouts send` table lists every option of send --help", async () => {
    expect(tableOptions('README.md', '### Options')).toEqual(await helpOptions('send'));
  });

  it("docs/sandbox.md's table lists every option of sandbox --help", async () => {
    expect(tableOptions('docs/sandbox.md', '| Option')).toEqual(await helpOptions('sandbox'));
  });
});

/** A heading's anchor as GitHub makes it: lower case, no punctuation but `-`, spaces as `-`. */
function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

describe('the README', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

  it('stays under 20 KB, the user guide: reference material is in docs/', () => {
    expect(Buffer.byteLength(readme)).toBeLessThan(20_480);
  });

  it('has a table of contents naming every section, and every # link names a heading', () => {
    const headings = [...readme.matchAll(/^#{2,3} (.+)$/gm)].map((m) => anchorOf(m[1]!));
    const contents = /^\*\*Contents:\*\*[\s\S]*?\n\n/m.exec(readme)?.[0] ?? '';
    const sections = [...readme.matchAll(/^## (.+)$/gm)].map((m) => anchorOf(m[1]!));
    for (const s of sections) expect(contents, s).toContain(`(#${s})`);
    const links = [...readme.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!);
    expect(links.filter((l) => !headings.includes(l))).toEqual([]);
  });
});
