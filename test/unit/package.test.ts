import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// The package as npm installs it: what it ships and which scripts installing it runs.

const root = new URL('../../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
  license: string;
  files: string[];
  scripts: Record<string, string>;
};

describe('the package', () => {
  it('runs no script of ours when installed: dist/ is built before packing', () => {
    // npm runs these on install of a tarball, where --strict-allow-scripts refuses them.
    for (const hook of ['preinstall', 'install', 'postinstall', 'prepare']) {
      expect(pkg.scripts[hook], hook).toBeUndefined();
    }
    expect(pkg.scripts.prepack).toBe('node scripts/build.mjs');
    expect(pkg.files).toContain('dist');
  });

  it("ships a LICENSE matching package.json's, and every page the README links to", () => {
    expect(pkg.license).toBe('MIT');
    expect(readFileSync(new URL('LICENSE', root), 'utf8')).toMatch(/^MIT License/);
    const readme = readFileSync(new URL('README.md', root), 'utf8');
    const links = [...readme.matchAll(/\]\(([^)#:]+)(#[^)]*)?\)/g)].map((m) => m[1]!);
    expect(links).toContain('docs/install.md');
    for (const link of links) {
      expect(existsSync(new URL(link, root)), link).toBe(true);
      const top = link.split('/')[0]!;
      expect(pkg.files.includes(top) || ['README.md', 'LICENSE'].includes(top), link).toBe(true);
    }
  });

  it('tells the same install line in the README as .ci/run tests', () => {
    const readme = readFileSync(new URL('README.md', root), 'utf8');
    const ci = readFileSync(new URL('.ci/run', root), 'utf8');
    expect(readme).toContain('--strict-allow-scripts --allow-scripts=better-sqlite3');
    expect(ci).toContain('--strict-allow-scripts --allow-scripts=better-sqlite3');
  });
});
