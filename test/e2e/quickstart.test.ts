import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

// The quick start's sends and status run in process (test/inprocess/quickstart.test.ts); --help
// and a mistyped option too (test/inprocess/help.test.ts). The version is the built binary's.
describe('quick start', () => {
  it('--version prints the package version', async () => {
    const r = await runCli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
