import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/context.js';
import { completionScript } from '../../src/core/completion/script.js';
import { buildProgram } from '../../src/main.js';
import { runMain } from '../helpers/main.js';
import { bashComplete, removeTempDirs, tempDir, writeScript } from '../helpers/bash-run.js';

afterAll(removeTempDirs);

describe('payouts completion', () => {
  let script = '';
  let cwd = '';
  beforeAll(async () => {
    const r = await runMain(['completion', 'bash']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    script = writeScript(r.stdout, 'payouts.bash');
    cwd = tempDir();
    for (const name of ['run.csv', 'refs.txt', 'may report.csv'])
      writeFileSync(join(cwd, name), '');
    mkdirSync(join(cwd, 'runs'));
  });
  const complete = (...words: string[]) =>
    bashComplete(script, '_payouts', ['payouts', ...words], cwd);

  it('completes command names', () => {
    expect(complete('se')).toEqual(['send']);
    expect(complete('')).toEqual([
      'approvals',
      'approve',
      'completion',
      'config',
      'help',
      'reconcile',
      'runs',
      'sandbox',
      'send',
      'state',
      'status',
      'template',
    ]);
    expect(complete('config', '')).toEqual([
      'check',
      'help',
      'path',
      'remove',
      'set',
      'set-credentials',
      'show',
    ]);
    expect(complete('completion', '')).toEqual(['bash', 'fish', 'powershell', 'zsh']);
  });

  it('completes options, the global ones too, and their choices', () => {
    expect(complete('send', '--fo')).toEqual(['--format']);
    expect(complete('send', '--format', '')).toEqual(['csv', 'json', 'ndjson', 'xlsx']);
    // bash splits "--format=" at the "=".
    expect(complete('send', '--format', '=')).toEqual(['csv', 'json', 'ndjson', 'xlsx']);
    expect(complete('send', '--format', '=', 'nd')).toEqual(['ndjson']);
    expect(complete('template', '--format', 'j')).toEqual(['json']);
    expect(complete('status', '--j')).toEqual(['--json']);
    expect(complete('--profile', 'staging', 'se')).toEqual(['send']);
  });

  it('completes file names for the files of send, --report, --failed-out and status --from', () => {
    const all = ['may report.csv', 'refs.txt', 'run.csv', 'runs'];
    expect(complete('send', '')).toEqual(all);
    expect(complete('send', 'run.csv', 'r')).toEqual(['refs.txt', 'run.csv', 'runs']);
    expect(complete('send', 'run.csv', '--report', 'm')).toEqual(['may report.csv']);
    expect(complete('send', '--failed-out', '')).toEqual(all);
    expect(complete('status', '--from', 'ref')).toEqual(['refs.txt']);
    // References are not file names.
    expect(complete('status', '')).toEqual([]);
  });

  it('shows an option added to a command without a change to the generator', async () => {
    const runtime = {
      env: {},
      stdin: Readable.from(['']),
      stdout: new PassThrough(),
      stderr: new PassThrough(),
      cwd,
      pid: 1,
      version: '0.0.0-test',
      interrupt: new AbortController().signal,
    } satisfies Runtime;
    const program = buildProgram(runtime, () => {});
    program.commands.find((c) => c.name() === 'send')!.option('--extra-out <file>', 'a new file');
    const extended = writeScript(completionScript('bash', program), 'payouts.bash');
    const run = (...words: string[]) =>
      bashComplete(extended, '_payouts', ['payouts', ...words], cwd);
    expect(run('send', '--ex')).toEqual(['--extra-out']);
    expect(run('send', '--extra-out', 'ref')).toEqual(['refs.txt']);
  });

  it('prints the zsh and fish scripts, and one JSON document under --json', async () => {
    expect((await runMain(['completion', 'zsh'])).stdout).toMatch(/^#compdef payouts\n/);
    expect((await runMain(['completion', 'fish'])).stdout).toContain('complete -c payouts -f\n');
    const ps = (await runMain(['completion', 'powershell'])).stdout;
    expect(ps).toContain("Register-ArgumentCompleter -Native -CommandName 'payouts'");
    expect(ps).toContain("'--failed-out'); desc = ");
    const json = await runMain(['completion', 'bash', '--json']);
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as { shell: string; script: string };
    expect(doc.shell).toBe('bash');
    expect(doc.script).toContain('complete -F _payouts payouts');
  });

  it('refuses another shell with the choices, and gives the install lines in --help', async () => {
    const bad = await runMain(['completion', 'tcsh']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('Allowed choices are bash, zsh, fish, powershell');
    const help = await runMain(['completion', '--help']);
    expect(help.stdout).toContain(
      'payouts completion bash > ~/.local/share/bash-completion/completions/payouts',
    );
    expect(help.stdout).toContain('source <(payouts completion bash)');
    // A folder of the user's own: fpath[1] is often a system folder only root can write.
    expect(help.stdout).toContain('payouts completion zsh > ~/.zfunc/_payouts');
    expect(help.stdout).toContain('fpath=(~/.zfunc $fpath)');
    expect(help.stdout).not.toContain('fpath[1]');
    expect(help.stdout).toContain('payouts completion powershell | Out-String | Invoke-Expression');
    expect(help.stdout).toContain(
      'payouts completion fish > ~/.config/fish/completions/payouts.fish',
    );
  });
});
