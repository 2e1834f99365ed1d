import { describe, expect, it } from 'vitest';
import { isPackageRunner, isShellCommand } from '../../../src/hang-ups.js';

// Issue 41: only a package runner's going stops a run; these read /proc's command lines.

describe('isPackageRunner', () => {
  it.each([
    [['npm exec payouts send run.csv']], // npm's title, as /proc shows npx and `npm exec`
    [['npm run send']],
    [['node', '/usr/lib/node_modules/npm/bin/npm-cli.js', 'exec', 'payouts']],
    [['/usr/local/bin/node', '/usr/local/bin/npx', 'payouts']],
    [['node', '/home/u/.local/share/pnpm/pnpm.cjs', 'exec', 'payouts']],
    [['/usr/bin/yarn', 'payouts']],
    [['bunx', 'payouts']],
  ])('%j is one', (args) => {
    expect(isPackageRunner(args)).toBe(true);
  });

  it.each([
    [['bash']],
    [['sh', '-c', 'npx payouts send run.csv']],
    [['python3', 'launch.py']],
    [['node', '/srv/app/npm-helper.js']],
    [['nohup', 'npm']],
    [[]],
  ])('%j is not', (args) => {
    expect(isPackageRunner(args)).toBe(false);
  });
});

describe('isShellCommand', () => {
  it('is a shell running a command string, as npm runs one', () => {
    expect(isShellCommand(['sh', '-c', "'payouts' 'send'"])).toBe(true);
    expect(isShellCommand(['/bin/bash', '-ec', 'payouts send'])).toBe(true);
    expect(isShellCommand(['-bash'])).toBe(false);
    expect(isShellCommand(['sh', 'script.sh'])).toBe(false);
    expect(isShellCommand(['python3', '-c', 'pass'])).toBe(false);
  });
});
