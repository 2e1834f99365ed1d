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
