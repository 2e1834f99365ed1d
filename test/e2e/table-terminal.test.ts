import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, fixture } from '../helpers/cli.js';
import { runMain } from '../helpers/main.js';
import { testService } from '../helpers/sandbox.js';

// Issue 27, as a finance person sees it: a send on a 70-column terminal, the spinner on
// (no CI, no NO_COLOR), credentials from a profile set with `payouts config set-credentials`.

const DRIVER = fileURLToPath(new URL('../helpers/pty-driver.py', import.meta.url));

/** Runs `payouts ARGS` on a pseudo-terminal `columns` wide; what the screen showed. */
function onTerminal(args: string[], columns: number, env: Record<string, string>): Promise<string> {
  const command = [DRIVER, '[]', '--cols', String(columns), '--', process.execPath, BIN, ...args];
  const fullEnv = {
    PATH: process.env.PATH ?? '',
    LANG: 'C.UTF-8',
    TERM: 'xterm-256color',
    ...env,
  };
  return new Promise((resolve, reject) => {
    execFile('python3', command, { env: fullEnv, timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve((JSON.parse(stdout) as { output: string }).output);
    });
  });
}

/** The lines a person reads: escape sequences gone, each line as its last return left it. */
function screenLines(output: string): string[] {
  return (
    output
      // The spinner goes back to the first column (CSI G) to draw its next frame.
      .replace(/\u001b\[\d*G/g, '\r')
      .replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '')
      .split('\n')
      .map(
        (l) =>
          l
            .split('\r')
            .filter((part) => part !== '')
            .at(-1) ?? '',
      )
  );
}

let service: Awaited<ReturnType<typeof testService>>;
beforeAll(async () => {
  service = await testService();
});
afterAll(async () => {
  await service.close();
});

describe('a send on a 70-column terminal', () => {
  it('shows a table no wider than the terminal, with every identifier whole', async () => {
    const home = service.home.env;
    // The profile is stored in this process, as `config set-credentials` does; the send is spawned.
    const set = await runMain(
      [
        'config',
        'set-credentials',
        '--client-id',
        'sandbox-client-id',
        '--client-secret-stdin',
        '--base-url',
        service.sandbox.baseUrl,
        '--no-keyring',
      ],
      { env: home, stdin: 'sandbox-client-secret\n' },
    );
    expect(set.code).toBe(0);
    const output = await onTerminal(['send', fixture('send', 'triggers.csv'), '--yes'], 70, home);
    const lines = screenLines(output);
    const start = lines.findIndex((l) => l.startsWith('reference_id'));
    const end = lines.findIndex((l) => /^\d+ payouts: /.test(l));
    expect(start).toBeGreaterThan(-1);
    expect(end).toBeGreaterThan(start);
    const table = lines.slice(start, end);
    for (const line of table) expect([...line].length, line).toBeLessThanOrEqual(70);
    for (const ref of ['TR-OK-1', 'TR-FAIL-1', 'TR-PEND-1', 'TR-CANC-1']) {
      expect(table.some((l) => l.startsWith(`${ref} `))).toBe(true);
    }
    const txns = output.match(/sbx_txn_[0-9a-f]+/g) ?? [];
    expect(txns).toHaveLength(4);
    for (const t of txns) expect(t).toHaveLength('sbx_txn_'.length + 20);
    // The spinner ran (it hides the cursor), and the table came in colour.
    expect(output).toContain('\u001b[?25l');
    expect(output).toMatch(/\u001b\[31mfailed/);
    expect(lines.join('\n')).toContain('message: Sandbox trigger: recipient asked for failed');
  });
});
