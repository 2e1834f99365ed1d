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

it('peak_concurrency is what was measured: 1 for a 1-request send, the most held at once', async () => {
  // Issue 49: a 1-request send said 10 (the limit it could have reached), not what it did.
  svc = await LedgerService.start(() => ({}));
  const home = tempHome();
  homes.push(home);
  const file = join(home.dir, 'run.csv');
  writeFileSync(file, 'reference_id,amount,currency,recipient\nP-1,1.00,EUR,p@example.com\n');
  const one = await runMain(['send', file, '--yes', '--json'], { env: svc.env(home.env) });
  expect(one.code, one.stderr).toBe(0);
  expect(JSON.parse(one.stdout).peak_concurrency).toBe(1);

  // Three requests held by the service until all three have arrived: three in flight at once.
  let arrived = 0;
  let release = () => {};
  const all = new Promise<void>((r) => {
    release = r;
  });
  await svc.close();
  svc = await LedgerService.start(() => {
    arrived += 1;
    if (arrived === 3) release();
    return { hold: all };
  });
  const three = join(home.dir, 'three.csv');
  const rows = ['T-1', 'T-2', 'T-3'].map((r) => `${r},1.00,EUR,t@example.com`);
  writeFileSync(three, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  const held = await runMain(['send', three, '--yes', '--json', '--chunk-size', '1'], {
    env: svc.env(home.env),
  });
  expect(held.code, held.stderr).toBe(0);
  expect(JSON.parse(held.stdout).peak_concurrency).toBe(3);
  expect(svc.appliedTwice()).toEqual([]);
});
