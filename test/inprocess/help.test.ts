import { readFileSync } from 'node:fs';
import { PassThrough, Readable } from 'node:stream';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/context.js';
import { COMMAND_EXIT_CODES, exitCodesHelp, exitCodeTable } from '../../src/exit-codes.js';
import { buildProgram } from '../../src/main.js';
import { runMain } from '../helpers/main.js';

// Issue 42, item 3: help that matches the commander tree, the README and a 100-column terminal.

/** The command tree as main builds it (nothing runs: only its commands and options are read). */
function tree(): Command {
  const runtime = {
    env: {},
    stdin: Readable.from(['']),
    stdout: new PassThrough(),
    stderr: new PassThrough(),
    cwd: process.cwd(),
    pid: process.pid,
    version: '0.0.0-test',
    interrupt: new AbortController().signal,
  } as Runtime;
  return buildProgram(runtime, () => {});
}

/** Every command below the root, with its path of names. */
function commands(c: Command, path: string[] = []): Array<{ path: string[]; cmd: Command }> {
  return c.commands.flatMap((sub) => {
    const here = [...path, sub.name()];
    return [{ path: here, cmd: sub }, ...commands(sub, here)];
  });
}

const program = tree();
const globals = program.options.filter((o) => o.long !== '--version').map((o) => o.long!);
const all = commands(program).filter(({ cmd }) => cmd.name() !== 'help');

describe('every command’s --help', () => {
  it('names every option the command takes, its own and the global ones', async () => {
    expect(all.length).toBeGreaterThan(15);
    for (const { path, cmd } of all) {
      const r = await runMain([...path, '--help'], { terminal: { columns: 100 } });
      expect(r.code, path.join(' ')).toBe(0);
      const own = cmd.options.map((o) => o.long ?? o.short!);
      for (const flag of [...own, ...globals]) {
        expect(r.stdout, `${path.join(' ')} --help names ${flag}`).toContain(flag);
      }
      expect(r.stdout).toContain('Also takes --profile <name>, --base-url <url>, --json');
    }
  });

  it('fits a 100-column terminal and an 80-column pipe without breaking a word', async () => {
    for (const { path } of [{ path: [] as string[] }, ...all]) {
      for (const [columns, width] of [
        [100, 100],
        [undefined, 80],
      ] as const) {
        const r = await runMain([...path, '--help'], columns ? { terminal: { columns } } : {});
        for (const line of r.stdout.split('\n')) {
          // An example is one command to copy: it is kept whole, and short.
          const limit = /^\s*\$ /.test(line) ? 100 : width;
          expect(line.length, `${path.join(' ')}: ${line}`).toBeLessThanOrEqual(limit);
        }
      }
    }
  });

  it('says each default once', async () => {
    const r = await runMain(['approvals', 'require', '--help']);
    expect(r.stdout).toContain('(default: 7)');
    expect(r.stdout).not.toContain('(default 7)');
    for (const { path } of all) {
      const help = (await runMain([...path, '--help'])).stdout;
      expect(help, path.join(' ')).not.toMatch(/\(default:? [^)]*\)\s+\(default/);
    }
  });

  it('shows examples of --prepare, --approved and --wait for send, and real references', async () => {
    const send = (await runMain(['send', '--help'])).stdout;
    for (const flag of ['--prepare', '--approved', '--wait']) {
      expect(send).toMatch(new RegExp(`\\$ payouts send .*${flag}`));
    }
    const status = (await runMain(['status', '--help'])).stdout;
    expect(status).toContain('$ payouts status INV-2026-0412');
    expect(status).not.toContain('po-2024-0001');
  });
});

describe('payouts alone', () => {
  it('prints the help on stdout and exits 0, as gh does', async () => {
    for (const argv of [[], ['--profile', 'ops']]) {
      const r = await runMain(argv);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^Usage: payouts \[options\] \[command\]/);
      expect(r.stderr).toBe('');
    }
  });

  it('under --json prints one error document and exits 2: stdout is for the document', async () => {
    const r = await runMain(['--json']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).error.message).toContain('name a command');
  });
});

// Moved from test/e2e/quickstart.test.ts: what they print is main's, not the process's.
describe('payouts --help and a mistyped option', () => {
  it('--help lists every command and the exit codes', async () => {
    const r = await runMain(['--help']);
    expect(r.code).toBe(0);
    for (const cmd of ['send', 'status', 'config', 'sandbox', 'template', 'runs']) {
      expect(r.stdout).toMatch(new RegExp(`^  ${cmd}\\b`, 'm'));
    }
    expect(r.stdout).toMatch(/7 +service or shared history unreachable, its answer unreadable/);
  });

  it('an unknown option is a usage error, exit 2', async () => {
    const r = await runMain(['send', '--no-such-flag']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown option/);
  });
});

describe('exit codes, from src/exit-codes.ts', () => {
  it('the README’s table is the one made from the source', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const start = readme.indexOf('| Code | Meaning | Run again? |');
    const end = readme.indexOf('\n\n', start);
    expect(readme.slice(start, end)).toBe(exitCodeTable());
  });

  it('every command lists its codes in the same words, and the root lists them all', async () => {
    for (const path of Object.keys(COMMAND_EXIT_CODES)) {
      const r = await runMain([...path.split(' '), '--help'], { terminal: { columns: 200 } });
      expect(r.stdout, path).toContain(exitCodesHelp(path));
    }
    // 0 in each command's own words: only send and status succeed by paying.
    const approve = await runMain(['approve', '--help'], { terminal: { columns: 200 } });
    expect(approve.stdout).toMatch(/^ {2}0 {4}the decision was recorded$/m);
    const check = await runMain(['config', 'check', '--help'], { terminal: { columns: 200 } });
    expect(check.stdout).not.toMatch(/every payout succeeded/);
    expect(check.stdout).toMatch(/^ {2}0 {4}the service accepted the credentials/m);
    const root = await runMain(['--help'], { terminal: { columns: 200 } });
    expect(root.stdout).toContain(exitCodesHelp());
  });
});
