import { afterEach, expect, it } from 'vitest';
import { sample, tempHome } from '../helpers/cli.js';
import { LedgerService } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';

let svc: LedgerService | undefined;
const homes: Array<{ cleanup(): void }> = [];
afterEach(async () => {
  await svc?.close();
  for (const h of homes.splice(0)) h.cleanup();
});

it('sends the sample in process', async () => {
  svc = await LedgerService.start();
  const home = tempHome();
  homes.push(home);
  const r = await runMain(['send', sample('payouts.csv'), '--yes', '--json'], {
    env: svc.env(home.env),
    clock: new FakeClock(),
  });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
});
