/**
 * A global setup, with PAYOUTS_TEST_CPU=1 only (see vitest.config.ts): gathers the lines
 * cpu-per-file.ts writes and prints, at the end of the run, the files that cost the most CPU.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where each test file's CPU line goes (cpu-per-file.ts). */
    cpuStatsFile: string;
  }
}

/** How many files the table shows. */
const SHOWN = 30;

const seconds = (ticks: number) => (ticks / 100).toFixed(2).padStart(6);

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'payouts-cpu-'));
  const file = join(dir, 'files.tsv');
  project.provide('cpuStatsFile', file);
  return () => {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {}
    rmSync(dir, { recursive: true, force: true });
    const rows = text
      .trim()
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => {
        const [path, own, children, server, ms] = l.split('\t');
        const r = { path: relative(process.cwd(), path!), own: +own!, children: +children! };
        return { ...r, server: +server!, ms: +ms!, all: r.own + r.children + +server! };
      })
      .sort((a, b) => b.all - a.all);
    const sum = (k: 'own' | 'children' | 'server') => rows.reduce((s, r) => s + r[k], 0);
    const lines = rows
      .slice(0, SHOWN)
      .map(
        (r) =>
          `${seconds(r.all)} ${seconds(r.own)} ${seconds(r.children)} ${seconds(r.server)} ${(r.ms / 1000).toFixed(1).padStart(6)}  ${r.path}`,
      );
    console.log(
      [
        `\nCPU seconds by test file (${rows.length} files; the ${Math.min(SHOWN, rows.length)} costliest):`,
        ' total worker  child server   wall  file',
        ...lines,
        `${seconds(sum('own') + sum('children') + sum('server'))} ${seconds(sum('own'))} ${seconds(sum('children'))} ${seconds(sum('server'))}         all files\n`,
      ].join('\n'),
    );
  };
}
