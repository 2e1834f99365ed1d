import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  readSandboxLedger,
  SANDBOX_CREDENTIALS,
  type SandboxOptions,
  startSandbox,
} from '../../src/sandbox/index.js';
import { tempHome } from './cli.js';

/** A sandbox on a loopback port with its own temp home, and the env for CLI runs against it. */
export async function testService(opts: Omit<SandboxOptions, 'stateDir'> = {}) {
  const home = tempHome();
  // The sandbox keeps its own state apart from the CLI's journals, as a remote service would.
  const serviceState = join(home.dir, 'service-state');
  const sandbox = await startSandbox({ ...opts, stateDir: serviceState });
  const env = {
    ...home.env,
    PAYOUTS_CLIENT_ID: SANDBOX_CREDENTIALS.clientId,
    PAYOUTS_CLIENT_SECRET: SANDBOX_CREDENTIALS.clientSecret,
    PAYOUTS_BASE_URL: sandbox.baseUrl,
    // A short response timeout keeps the quiet time before a read-back may prove "not
    // applied" at 3.3 s rather than 50 s; the sandbox's slowest answer here takes 1.5 s.
    PAYOUTS_TIMEOUT: '2',
  };
  return {
    home,
    sandbox,
    env,
    ledger: () => readSandboxLedger(serviceState),
    async close() {
      await sandbox.close();
      home.cleanup();
    },
  };
}

/** Asserts-friendly view of a ledger: references applied more than once or attempted twice. */
export function doubleSends(
  ledger: Map<string, { applied: number; duplicateAttempts: number }>,
): string[] {
  return [...ledger.entries()]
    .filter(([, e]) => e.applied !== 1 || e.duplicateAttempts !== 0)
    .map(([ref]) => ref);
}

/** Writes a run of `n` payouts (ONCE-0001 …) into `dir`; returns its path and references. */
export function writeRun(
  dir: string,
  n: number,
  name = 'run.csv',
): { file: string; refs: string[] } {
  const refs = Array.from({ length: n }, (_, i) => `ONCE-${String(i + 1).padStart(4, '0')}`);
  const file = join(dir, name);
  writeFileSync(
    file,
    `reference_id,amount,currency,recipient\n${refs.map((r, i) => `${r},${i + 1}.25,EUR,${r.toLowerCase()}@example.com`).join('\n')}\n`,
  );
  return { file, refs };
}

/** A payout file of `n` rows (2 unless given) whose references are PREFIX-1, PREFIX-2, …. */
export function prefixedRun(dir: string, prefix: string, n = 2): string {
  const file = join(dir, `${prefix.toLowerCase()}.csv`);
  const rows = Array.from(
    { length: n },
    (_, i) => `${prefix}-${i + 1},${i + 1}.00,EUR,${prefix.toLowerCase()}${i + 1}@example.com`,
  );
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return file;
}
