import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { tempHome } from '../helpers/cli.js';
import { LedgerService } from '../helpers/ledger-service.js';
import { runMain } from '../helpers/main.js';

let svc: LedgerService | undefined;
const homes: Array<{ cleanup(): void }> = [];
afterEach(async () => {
  await svc?.close();
  for (const h of homes.splice(0)) h.cleanup();
});

it('meets a rate-limited service at its pace: every payout applied once, the limit recovers after 429s', async () => {
  // A token bucket of 40 requests a second (burst 4) that answers 429 without Retry-After,
  // as API gateways do, and 20 ms per answer.
  const rate = 40;
  let tokens = 4;
  let refilled = Date.now();
  svc = await LedgerService.start(() => {
    const now = Date.now();
    tokens = Math.min(4, tokens + ((now - refilled) * rate) / 1000);
    refilled = now;
    if (tokens < 1) {
      return {
        apply: 'none',
        status: 429,
        body: { success: false, message: ['Too Many Requests'], data: [] },
      };
    }
    tokens -= 1;
    return { delayMs: 20 };
  });
  const home = tempHome();
  homes.push(home);
  const file = join(home.dir, 'run.csv');
  const rows = Array.from({ length: 600 }, (_, i) => `P-${i + 1},1.00,EUR,p${i + 1}@example.com`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  const r = await runMain(['send', file, '--yes', '--json', '--debug', '--chunk-size', '10'], {
    env: svc.env(home.env),
  });
  expect(r.code, r.stderr.slice(-2000)).toBe(0);
  const doc = JSON.parse(r.stdout) as {
    success_count: number;
    peak_concurrency: number;
    rate_limited_count: number;
  };
  expect(doc.success_count).toBe(600);
  expect(svc.appliedTwice()).toEqual([]);
  expect(svc.held.size).toBe(600);
  expect(doc.rate_limited_count).toBeGreaterThan(0);
  // The limit went down at a 429 and came back up after it.
  const pace = r.stderr.split('\n').filter((l) => l.includes('pace: '));
  const firstDrop = pace.findIndex((l) => /429/.test(l));
  expect(firstDrop).toBeGreaterThanOrEqual(0);
  expect(pace.slice(firstDrop + 1).some((l) => /without 429s/.test(l))).toBe(true);
});

it('a send starts with 8 requests in flight, up to --max-concurrency, and its summary says so', async () => {
  const home = tempHome();
  homes.push(home);
  const file = join(home.dir, 'run.csv');
  writeFileSync(file, 'reference_id,amount,currency,recipient\nP-1,1.00,EUR,p@example.com\n');
  const adaptive = await runMain(['send', file, '--dry-run'], { env: home.env });
  expect(adaptive.code, adaptive.stderr).toBe(0);
  expect(adaptive.stderr).toMatch(
    /Requests: +1 \(up to 100 payouts each, 8 at a time at first, up to 16 as the service allows\)/,
  );
  const low = await runMain(['send', file, '--dry-run', '--max-concurrency', '4'], {
    env: home.env,
  });
  expect(low.stderr).toMatch(/Requests: +1 \(up to 100 payouts each, 4 at a time\)/);
});
