import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseJsonStdout, spawnCli, writeCsv } from '../helpers/cli.js';
import { runMain } from '../helpers/main.js';
import { doubleSends, testService } from '../helpers/sandbox.js';
import type { SendDoc } from '../../src/core/documents.js';

// A reader that closes the pipe needs a real pipe; the rest of `payouts send` runs in
// process (test/inprocess/send.test.ts), as does the re-run that reads what the run left.

let service: Awaited<ReturnType<typeof testService>> | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

describe('payouts send: a reader that closes stdout early', () => {
  it('finishes the run and keeps its exit code when `| head` closes the pipe mid-document', async () => {
    service = await testService();
    // About 400 KB of --json results: far more than a pipe holds, so the writer meets EPIPE.
    const file = writeCsv(
      join(service.home.dir, 'closed-early.csv'),
      'reference_id,amount,currency,recipient',
      3000,
      (i) => `EP-${i},1.25,EUR,user${i}@example.com`,
    );
    const child = spawnCli(['send', file, '--yes', '--json'], { env: service.env });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.stdin.end();
    let firstBytes = '';
    child.stdout.once('data', (d: Buffer) => {
      firstBytes = d.toString('utf8');
      child.stdout.destroy();
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(firstBytes.startsWith('{')).toBe(true);
    expect(stderr).not.toContain('internal error');
    expect(stderr).toContain('standard output was closed before everything was written (EPIPE)');
    expect(code).toBe(0);
    // The run went on to its end: every payout arrived once, and the journal knows it.
    const ledger = await service.ledger();
    expect(ledger.size).toBe(3000);
    expect(doubleSends(ledger)).toEqual([]);
    // What the journal holds is read in this process: the pipe's part ended with the run.
    const again = await runMain(['send', file, '--yes', '--json'], { env: service.env });
    expect(again.code).toBe(0);
    expect(parseJsonStdout<SendDoc>(again).sent_earlier_count).toBe(3000);
  }, 60_000);
});
