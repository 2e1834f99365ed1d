import { describe, expect, it } from 'vitest';
import { runMain } from '../helpers/main.js';

// What the CLI decides from its flags and environment before it reads any file.

describe('payouts send --webhook-url', () => {
  it('refuses a URL that is not http(s) before reading any file, with exit code 2', async () => {
    const { code, stderr } = await runMain(['send', 'missing.csv', '--webhook-url', 'mailto:x@y']);
    expect(code).toBe(2);
    expect(stderr).toContain(
      '--webhook-url "mailto:x@y": use an absolute URL such as https://hooks.example.com/payouts',
    );
  });

  it('refuses a URL whose password is the *** payouts records in its place: it is given again', async () => {
    // As a finishing command repeats a run's --webhook-url (runs.send_args, masked).
    const masked = 'https://hook:***@hooks.example.invalid/payouts';
    const { code, stderr } = await runMain(['send', 'missing.csv', '--webhook-url', masked]);
    expect(code).toBe(2);
    expect(stderr).toContain(
      `--webhook-url "${masked}": its password shows as ***, as payouts records and shows it: give the webhook's URL with its real password`,
    );
  });
});

describe('colour turned off', () => {
  it('writes no colour on a terminal under each of them, and colour without', async () => {
    const missing = ['send', '/nonexistent.invalid/run.csv', '--dry-run'];
    const terminal = { columns: 80 };
    const coloured = await runMain(missing, { terminal, env: { TERM: 'xterm' } });
    expect(coloured.stderr).toContain('\u001b[31merror:');
    for (const [argv, env] of [
      [[...missing, '--no-color'], { TERM: 'xterm' }],
      [missing, { TERM: 'xterm', NO_COLOR: '1' }],
      [missing, { TERM: 'xterm', FORCE_COLOR: '0' }],
      [missing, { TERM: 'dumb' }],
    ] as const) {
      const r = await runMain([...argv], { terminal, env });
      expect(r.stderr).toContain('error:');
      expect(r.stderr).not.toContain('\u001b[');
    }
  });
});
