import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/exit-codes.js';
import { runMain } from '../helpers/main.js';

describe('payouts --help', () => {
  it('lists every exit code the CLI can return', async () => {
    const r = await runMain(['--help']);
    const table = r.stdout.slice(r.stdout.indexOf('Exit codes'));
    for (const code of Object.values(ExitCode)) {
      expect(table, `exit code ${code}`).toMatch(new RegExp(`(^|\\s)${code}\\s+\\S`, 'm'));
    }
  });
});
