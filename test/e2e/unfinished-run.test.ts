import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, tempHome } from '../helpers/cli.js';

describe('a run whose event loop empties before it finishes', () => {
  const home = tempHome();
  afterAll(() => home.cleanup());

  // Preloaded into the CLI: every connection attempt hangs without holding the loop open,
  // so the run is left waiting on a promise that nothing can settle any more.
  const preload = join(home.dir, 'hang-connect.cjs');
  writeFileSync(
    preload,
    "require('node:net').Socket.prototype.connect = function () { return this; };\n",
  );
  const env = {
    ...home.env,
    NODE_OPTIONS: `--require ${preload}`,
    PAYOUTS_BASE_URL: 'http://127.0.0.1:9',
    PAYOUTS_CLIENT_ID: 'id',
    PAYOUTS_CLIENT_SECRET: 'secret',
  };

  it('is an internal error, exit 1, not a silent exit 0', async () => {
    const r = await runCli(['status', 'R1'], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error: internal error: the run stopped with work unfinished');
  });

  it('prints the error document under --json', async () => {
    const r = await runCli(['status', 'R1', '--json'], { env });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({
      error: {
        exit_code: 1,
        message: expect.stringMatching(/^the run stopped with work unfinished/),
      },
    });
  });
});
