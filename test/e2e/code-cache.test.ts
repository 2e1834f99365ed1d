import { cpSync, readdirSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parseJsonStdout, runCli, sample, tempHome } from '../helpers/cli.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Every file under a folder, recursively. */
function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
  );
}

let home: ReturnType<typeof tempHome> | undefined;
afterEach(() => {
  home?.cleanup();
  home = undefined;
});

describe('code caches of dist/ (used on Node before 22.1)', () => {
  it('the build writes one beside each file of dist/ the common commands load', () => {
    const caches = files(join(ROOT, 'dist')).filter((f) => f.endsWith('.cjs.cache'));
    // Node 22.1+ caches compiled code itself: its builds write none, and the bin reads none.
    if ('enableCompileCache' in Module) return;
    expect(caches).toContain(join(ROOT, 'dist', 'cli.cjs.cache'));
    expect(caches.length).toBeGreaterThan(10);
  });

  it('a cache that does not match its file is ignored: the CLI still runs correctly', async () => {
    home = tempHome();
    const copy = join(home.dir, 'cli');
    cpSync(join(ROOT, 'bin'), join(copy, 'bin'), { recursive: true });
    cpSync(join(ROOT, 'dist'), join(copy, 'dist'), { recursive: true });
    const js = files(join(copy, 'dist')).filter((f) => f.endsWith('.cjs'));
    // A cache of the wrong bytes for every file, as a build by another Node version leaves.
    for (const f of js) writeFileSync(`${f}.cache`, Buffer.alloc(4096, 7));
    const bin = join(copy, 'bin', 'payouts.js');

    const help = await runCli(['--help'], { bin, env: home.env });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^ {2}send\b/m);

    const sent = await runCli(['send', sample('payouts.csv'), '--sandbox', '--yes', '--json'], {
      bin,
      env: home.env,
    });
    expect(sent.code).toBe(0);
    expect(parseJsonStdout<{ success_count: number }>(sent).success_count).toBe(12);
  });
});
