/** Pass 1: the files read once, as they stream past a hash, every row checked and staged, the totals. */
import { createHash, type Hash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { CreateRequest, PayoutRequest } from '../../api/types.js';
import { type Problem, UsageError } from '../../errors.js';
import {
  type InputSource,
  type IntakeOptions,
  ProblemList,
  readPayouts,
  type ValidPayout,
} from '../../input/index.js';
import { diagnose, flagsOf, type Needs, needsText, type RowChecks } from '../../input/diagnose.js';
import type { Renames } from '../../input/types.js';
import { CurrencyTotals } from '../../money/amount.js';
import type { CurrencyTable } from '../../money/currencies.js';
import { payoutHash, RunIntake } from '../../state/index.js';
import type { CsvRead } from '../report-style.js';
import { LookalikeReferences, type RowPlace } from '../../input/lookalikes.js';
import { privateTmp } from '../../state/tmp.js';
import { createNewFile } from '../../files.js';

/** What pass 1 learns about a run: every row valid, and the figures the summary shows. */
export interface RunPlan {
  sources: HashedSource[];
  payoutCount: number;
  totals: CurrencyTotals;
  requestCount: number;
  batchReference?: string;
  webhookUrl?: string;
  /** sha256 of the inputs' bytes: with the service, it names the run. */
  inputHash: string;
  /** The first create request, for --dry-run. */
  firstRequest: CreateRequest;
  /** The sheet read of each workbook, for the summary. */
  sheets?: Array<{ file: string; sheet: string }>;
  /** Rows sent under their new_reference_id, shown in the summary for a person to confirm. */
  renamed?: Renames;
  /** The files with a new_reference_id column (retry files): a refusal points into them. */
  retryFiles?: string[];
  /** How each CSV file was read (delimiter, decimal mark): its reports are written so. */
  csvReads?: CsvRead[];
}

/** What pass 1 needs besides the files. */
export interface PlanOptions {
  intake: IntakeOptions;
  currencies: CurrencyTable;
  chunkSize: number;
  batchReference?: string;
  webhookUrl?: string;
  warn: (message: string) => void;
  /** Keep each payout's identity hash (for sending); a dry run needs only uniqueness. */
  withHashes: boolean;
  /** Where the valid payouts go, as rows; a private scratch database when not given. */
  rows?: RunIntake;
  /** The command as typed, to which flags a file needs are added in the message saying so. */
  commandLine?: string;
}

/** Turns a validated row into the wire form of a payout. */
export function toPayoutRequest(p: ValidPayout): PayoutRequest {
  const out: PayoutRequest = {
    reference_id: p.reference_id,
    amount: p.amount.text,
    currency: p.currency,
    recipient: p.recipient,
  };
  if (p.description) out.description = p.description;
  return out;
}

/** The identity hash of a validated row (what must match across runs). */
export function hashOf(p: ValidPayout): string {
  return payoutHash({
    reference_id: p.reference_id,
    amount: p.amount.text,
    currency: p.currency,
    recipient: p.recipient,
  });
}

/** Both places of a repeated reference: "lines 4 and 9", or each with its file. */
function bothPlaces(first: RowPlace, again: RowPlace): string {
  if (first.file !== again.file) {
    return `${first.file} ${first.location} and ${again.file} ${again.location}`;
  }
  const [kind, a] = first.location.split(' ');
  const [kindAgain, b] = again.location.split(' ');
  return kind === kindAgain && a !== undefined && b !== undefined
    ? `${kind}s ${a} and ${b}`
    : `${first.location} and ${again.location}`;
}

/** The problem of a reference_id used again in one run, naming where it was first. */
function duplicate(ref: string, first: RowPlace, again: RowPlace): Problem {
  return {
    file: again.file,
    location: again.location,
    field: 'reference_id',
    value: ref,
    message: `is used on ${bothPlaces(first, again)}: each payout needs its own reference_id`,
  };
}

/** A repeated reference within one reading of a file that needs flags (diagnose's rows). */
const repeatedReferences: RowChecks = (add) => {
  const first = new Map<string, RowPlace>();
  const see = (ref: string, place: RowPlace) => {
    const earlier = first.get(ref);
    if (earlier) add(duplicate(ref, earlier, place));
    else first.set(ref, place);
  };
  return {
    payout: (p) => see(p.reference_id, p),
    refused: (ref, file, location) => see(ref, { file, location }),
  };
};

/** Picks the batch reference or webhook of the run: the flag, else the files' one value. */
function pickFileValue(
  flag: string | undefined,
  values: Array<string | undefined>,
  what: string,
): string | undefined {
  if (flag !== undefined) return flag;
  const distinct = [...new Set(values.filter((v): v is string => v !== undefined && v !== ''))];
  if (distinct.length > 1) {
    throw new UsageError(
      `the input files name different ${what} values (${distinct.map((v) => JSON.stringify(v)).join(', ')}): pass --${what.replace('_', '-')} to choose one`,
    );
  }
  return distinct[0];
}

/** The one problem saying which flags the files need, with the command line to run. */
function needsProblem(
  file: string,
  needs: Needs,
  opts: { commandLine?: string; more: number },
): Problem {
  const flags = flagsOf(needs).join(' ');
  const rest =
    (opts.more === 0
      ? 'it has no other problem'
      : `it still has ${opts.more === 1 ? 'the problem' : `the ${opts.more} problems`} below`) +
    // A German export's report opens in the same Excel: its amounts must be numbers there too.
    (needs.decimalComma
      ? '; --report and --failed-out are then written as it is, with its delimiter and a decimal comma'
      : '');
  const flagWord = flagsOf(needs).length === 1 ? 'that flag' : 'those flags';
  // The columns a --map reads are a guess about money: the person checks them before running.
  const check = needs.map ? 'Check those columns, then run' : 'Run';
  const run = opts.commandLine
    ? `${check}: ${opts.commandLine} ${flags}`
    : `${check} your command with ${flags}`;
  return { file, message: `${needsText(needs)}. Read with ${flagWord}, ${rest}. ${run}` };
}

/** What reading the files found. */
interface Reading {
  problems: ProblemList;
  totals: CurrencyTotals;
  first: PayoutRequest[];
  metas: Array<{
    batch_reference?: string;
    webhook_url?: string;
    sheet?: string;
    renamed?: Renames;
    retryFile?: true;
    csv?: { delimiter: string; decimalComma: boolean };
  }>;
  payoutCount: number;
}

/**
 * Reads every file once: each valid payout becomes a row (a reference used twice is refused
 * by the rows' unique index, and reported with both places), totals are kept per currency.
 */
async function readAll(
  sources: HashedSource[],
  opts: PlanOptions,
  rows: RunIntake,
): Promise<Reading> {
  const r: Reading = {
    problems: new ProblemList(),
    totals: new CurrencyTotals(),
    first: [],
    metas: [],
    payoutCount: 0,
  };
  const lookalikes = new LookalikeReferences(opts.warn);
  let needs: Needs = {};
  let needy: string | undefined;
  for (const source of sources) {
    const own = new ProblemList();
    const meta = await readPayouts(source, opts.intake, {
      refused(ref, file, location) {
        // A refused row still claims its reference: a later duplicate is reported now.
        const place = { file, location };
        const earlier = rows.refused(ref, place);
        if (earlier) r.problems.add(duplicate(ref, earlier, place));
        lookalikes.see(ref, place);
      },
      payout(p) {
        const earlier = rows.add({
          reference_id: p.reference_id,
          file: p.file,
          line: p.line,
          // Made only when the place is not a line: a line's text is made from its number.
          location: p.line === undefined ? p.location : undefined,
          amount: p.amount.text,
          currency: p.currency,
          recipient: p.recipient,
          description: p.description,
          // Made where the rows are written when that is another thread (RunIntake.hashesOwn).
          hash: opts.withHashes && !rows.hashesOwn ? hashOf(p) : '',
          retry_of: p.retry_of,
        });
        lookalikes.see(p.reference_id, p);
        r.payoutCount += 1;
        if (earlier) {
          r.problems.add(duplicate(p.reference_id, earlier, p));
          return;
        }
        r.totals.add(p.currency, p.amount.minor);
        if (r.first.length < opts.chunkSize) r.first.push(toPayoutRequest(p));
      },
      problem: (p) => own.add(p),
      warning: opts.warn,
    });
    r.metas.push(meta);
    const found = own.total
      ? await diagnose(source, opts.intake, own.shown, repeatedReferences)
      : undefined;
    if (found) {
      needs = { ...needs, ...found.needs };
      needy ??= source.name;
    }
    r.problems.absorb(found?.problems ?? own);
  }
  if (needy !== undefined) {
    const more = r.problems.total;
    r.problems.addFirst(needsProblem(needy, needs, { commandLine: opts.commandLine, more }));
  }
  await rows.caughtUp();
  rows.finish();
  lookalikes.confirm((ref) => rows.sighting(ref));
  rows.seal();
  return r;
}

/**
 * Pass 1: reads every file, validates every row, stores the valid ones as rows (checking
 * reference_id is unique across the run), and totals each currency. Throws InputError listing
 * every problem when any exists.
 */
export async function planRun(sources: HashedSource[], opts: PlanOptions): Promise<RunPlan> {
  const rows = opts.rows ?? RunIntake.scratch();
  let r: Reading;
  try {
    r = await readAll(sources, opts, rows);
  } finally {
    if (!opts.rows) rows.discard();
  }
  if (r.problems.total > 0) throw r.problems.toError();
  const batchReference = pickFileValue(
    opts.batchReference,
    r.metas.map((m) => m.batch_reference),
    'batch_reference',
  );
  const webhookUrl = pickFileValue(
    opts.webhookUrl,
    r.metas.map((m) => m.webhook_url),
    'webhook_url',
  );
  const firstRequest: CreateRequest = { payouts: r.first };
  if (webhookUrl !== undefined) firstRequest.webhook_url = webhookUrl;
  if (batchReference !== undefined) firstRequest.batch_reference = batchReference;
  return {
    sources,
    payoutCount: r.payoutCount,
    totals: r.totals,
    requestCount: Math.ceil(r.payoutCount / opts.chunkSize),
    batchReference,
    webhookUrl,
    inputHash: combinedHash(sources.map((s) => s.digest())),
    firstRequest,
    sheets: r.metas.flatMap((m, i) =>
      m.sheet === undefined ? [] : [{ file: sources[i]!.name, sheet: m.sheet }],
    ),
    renamed: allRenames(r.metas),
    retryFiles: sources.filter((_, i) => r.metas[i]?.retryFile).map((s) => s.name),
    csvReads: r.metas.flatMap((m, i) => (m.csv ? [{ file: sources[i]!.name, ...m.csv }] : [])),
  };
}

/** The renames of every file together: how many, and the first few. */
function allRenames(metas: Array<{ renamed?: Renames }>): Renames | undefined {
  const all: Renames = { count: 0, examples: [] };
  for (const m of metas) {
    if (!m.renamed) continue;
    all.count += m.renamed.count;
    all.examples.push(...m.renamed.examples.slice(0, 3 - all.examples.length));
  }
  return all.count ? all : undefined;
}

/** An input file of a run, whose bytes are hashed as they stream past the parser. */
export interface HashedSource extends InputSource {
  /** sha256 of the bytes read by the latest open(); complete once that stream has ended. */
  digest(): string;
}

/**
 * Wraps a file so every read also feeds a content hash (the journal is keyed by it). A dry
 * run, which journals nothing, skips the hash: on a million rows it was 4% of the run.
 */
export function hashedFileSource(path: string, name: string, hashing = true): HashedSource {
  let hash: Hash | undefined;
  let digest = '';
  return {
    name,
    open(): Readable {
      const stream = createReadStream(path);
      if (!hashing) return stream;
      const h = createHash('sha256');
      hash = h;
      stream.on('data', (chunk) => h.update(chunk));
      stream.on('end', () => {
        if (hash === h) digest = h.digest('hex');
      });
      return stream;
    },
    digest: () => digest,
  };
}

/**
 * Copies standard input to a private temporary file, so that a run can read it twice
 * (validate everything first, then send) without holding it in memory.
 */
export async function spoolStdin(
  stdin: Readable,
  dir: string,
  pid: number,
): Promise<{ path: string; remove(): void }> {
  const path = join(privateTmp(dir), `stdin-${pid}-${randomBytes(9).toString('hex')}.spool`);
  await pipeline(stdin, createWriteStream(path, { fd: createNewFile(path) }));
  return { path, remove: () => rmSync(path, { force: true }) };
}

/** Combines the per-file hashes of a run, in order, into the run's input hash. */
export function combinedHash(digests: string[]): string {
  const h = createHash('sha256');
  for (const d of digests) h.update(`${d}\n`);
  return h.digest('hex');
}
