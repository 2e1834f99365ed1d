import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');

/** Every .ts file under src/, as a path from the repository's root. */
function sourceFiles(dir = join(ROOT, 'src')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [relative(ROOT, path)] : [];
  });
}

/**
 * The project files a file imports or re-exports, type-only ones included: statically, and
 * through `import()` (loaded on first use, or a type named as `typeof import()`).
 */
function importsOf(file: string, text: string): string[] {
  const found = [
    ...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/gm),
    ...text.matchAll(/\bimport\(\s*'(\.[^']+)'\s*\)/g),
  ];
  const paths = found.map((m) => normalize(join(dirname(file), m[1]!.replace(/\.js$/, '.ts'))));
  return [...new Set(paths)];
}

const files = sourceFiles();
const graph = new Map(files.map((f) => [f, importsOf(f, readFileSync(join(ROOT, f), 'utf8'))]));

/** The circles of files of a graph (strongly connected components of more than one file). */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) visit(w);
      if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, low.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const part = stack.splice(stack.indexOf(v));
    if (part.length > 1) found.push(part);
  };
  for (const f of graph.keys()) if (!index.has(f)) visit(f);
  return found;
}

describe('the layout of src/', () => {
  it('has no circle of files', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('sees a circle that only an import() closes, a type named through one too', () => {
    const texts: Record<string, string> = {
      'src/a.ts': "import { b } from './b.js';\nexport const a = 1;",
      'src/b.ts':
        "export async function b() {\n  const { c } = await import(\n    './c.js'\n  );\n}",
      'src/c.ts': "export type C = ReturnType<typeof import('./a.js').a>;",
    };
    const small = new Map(Object.entries(texts).map(([f, t]) => [f, importsOf(f, t)]));
    expect(small.get('src/b.ts')).toEqual(['src/c.ts']);
    expect(circles(small).map((c) => c.sort())).toEqual([['src/a.ts', 'src/b.ts', 'src/c.ts']]);
  });

  it('keeps the domain at the bottom and the store below the core', () => {
    const wrong = [...graph].flatMap(([file, deps]) =>
      deps
        .filter(
          (d) =>
            (file.startsWith('src/domain/') && !d.startsWith('src/domain/')) ||
            (file.startsWith('src/state/') && d.startsWith('src/core/')),
        )
        .map((d) => `${file} imports ${d}`),
    );
    expect(wrong).toEqual([]);
  });

  it('keeps files small, and a send to about twenty', () => {
    const lines = (f: string) => readFileSync(join(ROOT, f), 'utf8').split('\n').length - 1;
    expect(files.filter((f) => lines(f) > 400)).toEqual([]);
    expect(
      files.filter((f) => f.startsWith(join('src', 'core', 'send', ''))).length,
    ).toBeLessThanOrEqual(20);
  });

  it('opens SQLite only through openDatabase, whose statements are never garbage', () => {
    // better-sqlite3 12 built for Node 24 aborts the process when a collection frees a
    // statement, connection or iterator outside JavaScript: none may be made elsewhere.
    const everywhere = [...files, ...sourceFiles(join(ROOT, 'test'))];
    const wrong = everywhere.filter(
      (f) =>
        f !== join('src', 'state', 'db.ts') &&
        /new Database\(|\.pragma\(|\.iterate\(/.test(readFileSync(join(ROOT, f), 'utf8')),
    );
    expect(wrong).toEqual([]);
  });

  it('keeps unit tests to functions: no server, no spawned process, no whole CLI run', () => {
    // Those belong in test/integration/ (a server, a process) or test/inprocess/ (main()).
    const heavy = new RegExp(
      ['runMain', 'runCli', 'onTerminal', 'spawn', 'spawnSync', 'execFile', 'ledgerPerTest']
        .concat(['freshDatabase', 'migratedDatabase', 'recycledDatabase', 'startPostgres'])
        .map((name) => `\\b${name}\\(`)
        .join('|'),
    );
    const units = sourceFiles(join(ROOT, 'test', 'unit')).filter(
      (f) => !f.endsWith('layout.test.ts'),
    );
    expect(units.filter((f) => heavy.test(readFileSync(join(ROOT, f), 'utf8')))).toEqual([]);
  });
});
