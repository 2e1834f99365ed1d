import { afterEach, describe, expect, it } from 'vitest';
import { parseJsonStdout } from '../helpers/cli.js';
import { runsOnFakeClock } from '../helpers/main.js';
import { freshDatabase, query } from '../helpers/pg.js';
import { doubleSends, testService, writeRun } from '../helpers/sandbox.js';

let service: Awaited<ReturnType<typeof testService>> | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

const run = runsOnFakeClock();

describe('a shared history on PostgreSQL', () => {
  it('records a send there, and a second run finds it sent earlier', async () => {
    service = await testService();
    const url = await freshDatabase();
    const env = { ...service.env, PAYOUTS_STATE_URL: url };
    const { file, refs } = writeRun(service.home.dir, 12);
    const first = await run(['send', file, '--yes', '--json'], { env });
    expect(first.code).toBe(0);
    const rows = await query<{ n: number }>(url, 'SELECT count(*)::int AS n FROM results');
    expect(rows[0]!.n).toBe(12);
    const again = await run(['send', file, '--yes', '--json'], { env });
    expect(again.code).toBe(0);
    expect(parseJsonStdout<{ sent_earlier_count: number }>(again).sent_earlier_count).toBe(12);
    const ledger = await service.ledger();
    expect([...ledger.keys()].sort()).toEqual(refs);
    expect(doubleSends(ledger)).toEqual([]);
  });
});
