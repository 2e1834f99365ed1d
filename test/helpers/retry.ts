import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import {
  type CreatePolicy,
  failsThese,
  type LedgerService,
  type ledgerPerTest,
} from './ledger-service.js';
import { FakeClock, runMain } from './main.js';
import { recycledDatabase } from './pg.js';

// What the retry tests share: the November file's rows, a retry file's header, and a service,
// home, file writer and runner against a store (test/inprocess/retry-*.test.ts).

export const HEADER = 'reference_id,amount,currency,recipient,description';
export const RETRY_HEADER = 'reference_id,new_reference_id,amount,currency,recipient,description';

/** ROW-n of the November file, as a CSV line (with a new reference when given). */
export function row(n: number, fresh?: string): string {
  const tail = `1.25,EUR,r${n}@example.com,November ${n}`;
  return fresh === undefined ? `ROW-${n},${tail}` : `ROW-${n},${fresh},${tail}`;
}

/** Sends one payout a request, without a question. */
export function sendArgs(file: string, ...more: string[]): string[] {
  return ['send', file, '--yes', '--chunk-size', '1', '--concurrency', '1', ...more];
}

/** The run id the last line of a send names. */
export function runIdOf(stderr: string): string {
  const id = /Run ([0-9a-f]{16}): payouts runs show/.exec(stderr)?.[1];
  expect(id, stderr).toBeDefined();
  return id as string;
}

/**
 * A service (failing as `policy` says), a home, a writer of its files and a runner against
 * them and the store `withStore` adds (`more` adds to one run's env).
 */
export async function retrySetUp(
  fixture: ReturnType<typeof ledgerPerTest>,
  withStore: (env: Record<string, string>) => Record<string, string>,
  policy?: CreatePolicy,
) {
  const svc = await fixture.start(policy);
  const home = fixture.home();
  const env = withStore(svc.env(home.env));
  const run = (args: string[], more: Record<string, string> = {}) =>
    runMain(args, { env: { ...env, ...more }, clock: new FakeClock() });
  /** Writes a file of the home folder; its path. */
  const write = (name: string, lines: string[]) => {
    const path = join(home.dir, name);
    writeFileSync(path, `${lines.join('\n')}\n`);
    return path;
  };
  return { svc, home, env, run, write };
}

/**
 * retrySetUp against an empty shared history (`admin`, its owner's URL), the service failing
 * the references `failing`; each run names the role's URL it runs as.
 */
export async function sharedRetrySetUp(
  fixture: ReturnType<typeof ledgerPerTest>,
  failing: string[],
) {
  const admin = await recycledDatabase();
  const base = await retrySetUp(fixture, (env) => env, failsThese(new Set(failing)));
  const run = (url: string, args: string[]) => base.run(args, { PAYOUTS_STATE_URL: url });
  return { admin, svc: base.svc, run, write: base.write };
}

/** People the service paid more than once, under any references (a retry's included). */
export function peoplePaidTwice(svc: LedgerService): string[] {
  const paid = new Map<string, number>();
  for (const h of svc.held.values()) {
    if (h.status !== 'success') continue;
    paid.set(h.recipient, (paid.get(h.recipient) ?? 0) + h.times + (h.times === 0 ? 1 : 0));
  }
  return [...paid].filter(([, n]) => n > 1).map(([who]) => who);
}
