/** Helpers shared by the intake tests: fixture paths, in-memory sources, a recording sink. */

import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { formatProblem, type Problem } from '../../../src/errors.js';
import {
  type FileMeta,
  fileSource,
  type InputSource,
  type IntakeOptions,
  readPayouts,
  type ValidPayout,
} from '../../../src/input/index.js';
import { CurrencyTable } from '../../../src/money/currencies.js';

/** Absolute path of a fixture under test/fixtures/input. */
export function fixture(name: string): string {
  return fileURLToPath(new URL(`../../fixtures/input/${name}`, import.meta.url));
}

/** A source over bytes held in memory, cut into chunks of `chunkSize` bytes. */
export function memorySource(
  name: string,
  content: string | Buffer,
  chunkSize = 65536,
): InputSource {
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  return {
    name,
    open() {
      const chunks: Buffer[] = [];
      for (let i = 0; i < bytes.length; i += chunkSize)
        chunks.push(bytes.subarray(i, i + chunkSize));
      return Readable.from(chunks, { objectMode: false });
    },
  };
}

/** Everything one read reported. */
export interface Intake {
  payouts: ValidPayout[];
  problems: Problem[];
  warnings: string[];
  meta: FileMeta;
  /** The problems as the user sees them. */
  lines: string[];
}

/** Reads a source with a sink that records everything. */
export async function intake(
  source: InputSource,
  opts: Partial<IntakeOptions> = {},
): Promise<Intake> {
  const payouts: ValidPayout[] = [];
  const problems: Problem[] = [];
  const warnings: string[] = [];
  const meta = await readPayouts(
    source,
    { currencies: new CurrencyTable(), ...opts },
    {
      payout: (p) => payouts.push(p),
      problem: (p) => problems.push(p),
      warning: (m) => warnings.push(m),
    },
  );
  return { payouts, problems, warnings, meta, lines: problems.map(formatProblem) };
}

/** Reads a fixture file, named in messages by its bare name. */
export function intakeFixture(name: string, opts: Partial<IntakeOptions> = {}): Promise<Intake> {
  return intake(fileSource(fixture(name), name), opts);
}

/** Reads CSV text held in memory. */
export function intakeCsv(
  text: string | Buffer,
  opts: Partial<IntakeOptions> = {},
  chunkSize?: number,
): Promise<Intake> {
  return intake(memorySource('test.csv', text, chunkSize), opts);
}

/** The documented CSV header. */
export const HEADER = 'reference_id,amount,currency,recipient,description';
