import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli.js';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { runMain } from '../helpers/main.js';
import { recycledDatabase, teamRoles } from '../helpers/pg.js';

// Issue 49, item 6: docs/approvals.md's CI block runs as written, in `sh`, against the built
// binary: the clerk prepares, CI's loop sends --approved and waits while the send exits 9,
// another person approves meanwhile, and the loop's next send sends (exit 0). The process is
// under test here: the loop reads each run's exit code.

const fixture = ledgerPerTest();

/** The ```sh block under "## CI: prepare, wait, send" of docs/approvals.md. */
function ciBlock(): string {
  const doc = readFileSync(new URL('../../docs/approvals.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## CI: prepare, wait, send'));
  const block = /```sh\n([\s\S]*?)\n```/.exec(section)?.[1];
  if (!block) throw new Error('docs/approvals.md has no CI block');
  return block;
}

describe("docs/approvals.md's CI block", () => {
  it('waits while the run awaits approval, then sends it once', async () => {
    const admin = await recycledDatabase();
    const svc = await fixture.start();
    const home = fixture.home();
    const env = { ...svc.env(home.env), PAYOUTS_STATE_URL: admin };
    expect((await runMain(['approvals', 'require'], { env })).code).toBe(0);
    const { ana, bob } = await teamRoles(admin);
    const rows = ['DEC-1,10.00,EUR,a@example.com', 'DEC-2,20.00,EUR,b@example.com'];
    writeFileSync(
      join(home.dir, 'dec.csv'),
      `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`,
    );
    // `payouts` is the built binary; `sleep` is the wait, during which Bob approves.
    const bin = join(home.dir, 'bin');
    mkdirSync(bin);
    const payouts = join(bin, 'payouts');
    writeFileSync(payouts, `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
    const sleep = join(bin, 'sleep');
    writeFileSync(
      sleep,
      [
        '#!/bin/sh',
        `echo "$1" >> "${join(home.dir, 'slept')}"`,
        `prep=$(PAYOUTS_STATE_URL="$BOB_URL" payouts approvals --json | jq -r '.runs[0].prepared_run_id')`,
        'PAYOUTS_STATE_URL="$BOB_URL" payouts approve "$prep" --yes > /dev/null',
        '',
      ].join('\n'),
    );
    chmodSync(payouts, 0o755);
    chmodSync(sleep, 0o755);
    // Not spawnSync: the service answering the script's sends runs in this process.
    const r = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
      const child = execFile(
        'sh',
        ['-c', ciBlock()],
        {
          cwd: home.dir,
          env: {
            ...svc.env(home.env),
            PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
            LANG: 'C.UTF-8',
            PAYOUTS_STATE_URL: ana,
            BOB_URL: bob,
          },
          encoding: 'utf8',
          timeout: 60_000,
        },
        (_err, _stdout, stderr) => resolve({ status: child.exitCode, stderr }),
      );
    });
    expect(r.status, r.stderr).toBe(0);
    // One wait: the first send exited 9 (awaiting approval), the second sent.
    expect(readFileSync(join(home.dir, 'slept'), 'utf8')).toBe('300\n');
    const sent = JSON.parse(readFileSync(join(home.dir, 'sent.json'), 'utf8'));
    expect(sent).toMatchObject({ exit_code: 0, success_count: 2 });
    expect(sent.approval.approvers).toHaveLength(1);
    expect([...svc.held.keys()].sort()).toEqual(['DEC-1', 'DEC-2']);
    expect(svc.appliedTwice()).toEqual([]);
  });
});
