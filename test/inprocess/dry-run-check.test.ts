import { expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { runMain } from '../helpers/main.js';
import { writeRun } from '../helpers/sandbox.js';

// Issue 41: `send --dry-run --check-service` looks the payouts up, as a send would before its
// summary, and says which the service holds; it sends and records nothing.

const fixture = ledgerPerTest();

it('send --dry-run --check-service names the payouts the service holds, sending nothing', async () => {
  const home = fixture.home();
  const svc = await fixture.start();
  const { file, refs } = writeRun(home.dir, 5);
  // Sent from elsewhere: this folder's history knows nothing of them.
  for (const [i, ref] of refs.slice(0, 2).entries()) {
    svc.preload({
      reference_id: ref,
      amount: i + 1.25,
      currency: 'EUR',
      recipient: `${ref.toLowerCase()}@example.com`,
    });
  }
  const env = svc.env(home.env);
  const r = await runMain(['send', file, '--dry-run', '--check-service'], { env });
  expect(r.code, r.stderr).toBe(0);
  expect(r.stderr).toContain(
    'The service holds 2 of the 5 payouts looked up: ONCE-0001 (success), ONCE-0002 (success). A send counts them as sent earlier.',
  );
  expect(r.stderr).toMatch(
    /Sent earlier: +EUR +3\.50 +\(2 payouts; not sent again\)\n +by the service itself/,
  );
  expect(r.stderr).toMatch(/To send now: +EUR 12\.75 +\(3 payouts\)/);
  const json = await runMain(['send', file, '--dry-run', '--check-service', '--json'], { env });
  const doc = JSON.parse(json.stdout) as {
    sent_earlier: { payout_count: number };
    to_send: { payout_count: number };
  };
  expect(doc.sent_earlier.payout_count).toBe(2);
  expect(doc.to_send.payout_count).toBe(3);
  expect(svc.gets).toBe(10);
  expect(svc.creates).toBe(0);
  // Without --check-service nothing is looked up.
  const plain = await runMain(['send', file, '--dry-run'], { env });
  expect(plain.stderr).not.toContain('The service holds');
  expect(svc.gets).toBe(10);
});
