/**
 * Measures group commit: N intents from one writer (each awaited) against the same N from
 * several concurrent writers. Not a test; run it with
 *   npx esbuild test/unit/journal/measure-group-commit.ts --bundle --platform=node \
 *     --format=esm --outfile=/tmp/measure.mjs && node /tmp/measure.mjs [dir] [intents]
 * The folder should be on the disk the state folder lives on: fsync cost is the point.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { RunJournal, runIdFor } from '../../../src/journal/index.js';

/** Result of one measurement. */
export interface Measurement {
  writers: number;
  intents: number;
  fsyncs: number;
  ms: number;
  intentsPerSecond: number;
}

/** Records `intents` intents from `writers` concurrent writers into a fresh journal. */
export async function measure(dir: string, intents: number, writers: number): Promise<Measurement> {
  const stateDir = await mkdtemp(join(dir, 'payouts-measure-'));
  try {
    const j = await RunJournal.open({
      stateDir,
      serviceKey: 'sandbox',
      runId: runIdFor('sandbox', `measure-${writers}`),
      header: {
        service: 'sandbox',
        client_id: 'x',
        inputs: ['m.csv'],
        input_hash: `measure-${writers}`,
        payout_count: intents,
      },
    });
    const base = j.syncCount;
    let next = 1;
    const start = performance.now();
    const writer = async () => {
      while (next <= intents) {
        const req = next++;
        await j.recordIntent(req, [{ ref: `REF-${req}`, hash: '0123456789abcdef' }]);
      }
    };
    await Promise.all(Array.from({ length: writers }, writer));
    const ms = performance.now() - start;
    await j.close();
    return {
      writers,
      intents,
      fsyncs: j.syncCount - base,
      ms: Math.round(ms),
      intentsPerSecond: Math.round((intents / ms) * 1000),
    };
  } finally {
    await rm(stateDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dir = process.argv[2] ?? tmpdir();
  const intents = Number(process.argv[3] ?? 10_000);
  for (const writers of [1, 4, 16]) {
    process.stdout.write(`${JSON.stringify(await measure(dir, intents, writers))}\n`);
  }
}
