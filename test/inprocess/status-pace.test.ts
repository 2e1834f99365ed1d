import { expect, it } from 'vitest';
import { sendJson } from '../helpers/http-servers.js';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { runMain } from '../helpers/main.js';

// Issue 41: status keeps to the service's pace at any --concurrency, as send does.

const fixture = ledgerPerTest();

it('status --concurrency 32 against a service taking 4 lookups at a time: waits, gives none up', async () => {
  const home = fixture.home();
  const svc = await fixture.start();
  const refs = Array.from({ length: 100 }, (_, i) => `S-${String(i + 1).padStart(3, '0')}`);
  for (const reference_id of refs)
    svc.preload({ reference_id, amount: 1, currency: 'EUR', recipient: 'a@example.com' });
  // More than 4 in flight: 429 with a Retry-After; the others are answered 20 ms later.
  let inFlight = 0;
  let refused = 0;
  svc.onGet = (ref, res) => {
    if (inFlight >= 4) {
      refused += 1;
      sendJson(
        res,
        429,
        { success: false, message: ['Too Many Requests'] },
        { 'retry-after': '1' },
      );
      return true;
    }
    inFlight += 1;
    const h = svc.held.get(ref)!;
    setTimeout(() => {
      inFlight -= 1;
      sendJson(res, 200, {
        success: true,
        message: ['Payout retrieved'],
        data: { ...h, times: undefined, transaction_id: `T-${ref}` },
      });
    }, 20);
    return true;
  };
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.name);
  process.on('warning', onWarning);
  try {
    const args = ['status', ...refs, '--concurrency', '32', '--json'];
    const r = await runMain(args, { env: svc.env(home.env) });
    expect(r.code, r.stderr.slice(-1000)).toBe(0);
    const doc = JSON.parse(r.stdout) as { success_count: number; error_count: number };
    expect(doc).toMatchObject({ success_count: 100, error_count: 0 });
    // It met the limit, and kept to it.
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThan(100);
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toEqual([]);
  } finally {
    process.off('warning', onWarning);
  }
});
