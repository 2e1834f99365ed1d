import type { CreateRequest, PayoutRequest } from '../../api/types.js';
import { type Problem, UsageError } from '../../errors.js';
import {
  type IntakeOptions,
  ProblemList,
  readPayouts,
  type ValidPayout,
} from '../../input/index.js';
import { payoutHash } from '../../journal/index.js';
import { CurrencyTotals, formatMinor, parseAmount } from '../../money/amount.js';
import type { CurrencyTable } from '../../money/currencies.js';
import type { MaxTotal } from './options.js';
import { LookalikeReferences, type RowPlace } from './lookalikes.js';
import { RefIndex } from './ref-index.js';
import { combinedHash, type HashedSource } from './sources.js';
import type { PayoutSpool } from './spool.js';

/** What pass 1 learns about a run: every row valid, and the figures the summary shows. */
export interface RunPlan {
  sources: HashedSource[];
  payoutCount: number;
  totals: CurrencyTotals;
  requestCount: number;
  batchReference?: string;
  webhookUrl?: string;
  /** sha256 of the inputs' bytes: with the service, it names the run's journal. */
  inputHash: string;
  /**
   * Fingerprints of the run's references, sealed, for resume and the cross-run check. Only
   * "maybe ours": the payouts themselves (and their hashes) are in the spool.
   */
  refs: RefIndex;
  /** The first create request, for --dry-run. */
  firstRequest: CreateRequest;
}

/** What pass 1 needs besides the files. */
export interface PlanOptions {
  intake: IntakeOptions;
  currencies: CurrencyTable;
  chunkSize: number;
  batchReference?: string;
  webhookUrl?: string;
  maxTotals: MaxTotal[];
  warn: (message: string) => void;
  /** Keep each payout's identity hash (for sending); a dry run needs only uniqueness. */
  withHashes: boolean;
  /** Receives every valid payout, serialised, for pass 2 to send from. */
  spool?: PayoutSpool;
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

/** Remembers where each suspect reference was first seen; returns the first place of a repeat. */
class FirstPlaces {
  private readonly places = new Map<string, RowPlace>();

  constructor(private readonly suspect: (ref: string) => boolean) {}

  /** Where the reference was first seen, when this row repeats it; else undefined. */
  repeatOf(ref: string, file: string, location: string): RowPlace | undefined {
    if (!this.suspect(ref)) return undefined;
    const first = this.places.get(ref);
    if (first === undefined) this.places.set(ref, { file, location });
    return first;
  }
}

/**
 * For a send whose fingerprints repeat: reads the files again and collects every problem in
 * the order found, each repeat of a suspect reference confirmed by its text and reported where
 * it occurs (as a table of every reference would have), and the totals without the repeats.
 */
async function recollectProblems(
  sources: HashedSource[],
  intake: IntakeOptions,
  suspect: (ref: string) => boolean,
): Promise<{ problems: ProblemList; totals: CurrencyTotals }> {
  const problems = new ProblemList();
  const totals = new CurrencyTotals();
  const places = new FirstPlaces(suspect);
  /** False when the reference is a confirmed repeat (and reports it). */
  const first = (ref: string, file: string, location: string): boolean => {
    const earlier = places.repeatOf(ref, file, location);
    if (earlier === undefined) return true;
    problems.add(duplicate(ref, earlier, { file, location }));
    return false;
  };
  for (const source of sources) {
    await readPayouts(source, intake, {
      payout: (p) => {
        if (first(p.reference_id, p.file, p.location)) totals.add(p.currency, p.amount.minor);
      },
      refused: (ref, file, location) => {
        first(ref, file, location);
      },
      problem: (p) => problems.add(p),
      warning() {},
    });
  }
  return { problems, totals };
}

/**
 * Reads the files again and reports each repeat of a suspect reference by its text, so a
 * fingerprint collision between two different references is never taken for a duplicate.
 */
async function confirmDuplicates(
  sources: HashedSource[],
  intake: IntakeOptions,
  suspect: (ref: string) => boolean,
): Promise<Problem[]> {
  const places = new FirstPlaces(suspect);
  const found: Problem[] = [];
  const visit = (ref: string, file: string, location: string) => {
    const earlier = places.repeatOf(ref, file, location);
    if (earlier !== undefined) found.push(duplicate(ref, earlier, { file, location }));
  };
  for (const source of sources) {
    await readPayouts(source, intake, {
      payout: (p) => visit(p.reference_id, p.file, p.location),
      refused: visit,
      problem() {},
      warning() {},
    });
  }
  return found;
}

/** The second look LookalikeReferences asks for: every row's reference, in pass 1's order. */
async function recheckLookalikes(
  sources: HashedSource[],
  intake: IntakeOptions,
  lookalikes: LookalikeReferences,
): Promise<void> {
  for (const source of sources) {
    await readPayouts(source, intake, {
      payout: (p) => lookalikes.recheck(p.reference_id, p),
      refused: (ref, file, location) => lookalikes.recheck(ref, { file, location }),
      problem() {},
      warning() {},
    });
  }
}

/** What pass 1 found that its fingerprints alone cannot settle. */
interface PassOneFindings {
  refs: RefIndex;
  lookalikes: LookalikeReferences;
  problems: ProblemList;
  totals: CurrencyTotals;
}

/**
 * Settles by the references' text what the sealed fingerprints suggest (look-alikes, repeats),
 * reading the files again only when they suggest something; returns the problems and totals.
 */
async function confirmByText(
  sources: HashedSource[],
  opts: PlanOptions,
  found: PassOneFindings,
): Promise<{ problems: ProblemList; totals: CurrencyTotals }> {
  const { refs, lookalikes, problems } = found;
  if (lookalikes.suspects((ref) => refs.has(ref))) {
    await recheckLookalikes(sources, opts.intake, lookalikes);
  }
  const suspect = (ref: string) => refs.isRepeated(ref);
  if (refs.repeated && opts.withHashes) {
    // The problems and totals as if every reference had been compared by its text.
    return recollectProblems(sources, opts.intake, suspect);
  }
  if (refs.repeated) {
    for (const p of await confirmDuplicates(sources, opts.intake, suspect)) problems.add(p);
  }
  return { problems, totals: found.totals };
}

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

/** Checks --max-total ceilings against the run's totals, as problems. */
function checkMaxTotals(
  totals: CurrencyTotals,
  maxTotals: MaxTotal[],
  currencies: CurrencyTable,
): Problem[] {
  const problems: Problem[] = [];
  for (const limit of maxTotals) {
    const digits = currencies.minorUnits(limit.currency);
    const parsed = parseAmount(limit.amountText, digits);
    if (!parsed.ok || digits === undefined) {
      throw new UsageError(
        `--max-total ${limit.currency}=${limit.amountText}: ${parsed.ok ? 'unknown currency' : parsed.message}`,
      );
    }
    const total = totals.minorOf(limit.currency);
    if (total > parsed.amount.minor) {
      problems.push({
        file: '--max-total',
        field: limit.currency,
        value: limit.amountText,
        message: `the run's ${limit.currency} total is ${formatMinor(total, digits)}, above the limit of ${limit.amountText}; nothing was sent`,
      });
    }
  }
  return problems;
}

/**
 * Pass 1: reads every file, validates every row, checks reference_id is unique across the
 * run, and totals each currency. Throws InputError listing every problem when any exists.
 */
export async function planRun(sources: HashedSource[], opts: PlanOptions): Promise<RunPlan> {
  let problems = new ProblemList();
  // The fingerprint of every reference seen, refused rows' included. A fingerprint seen twice
  // makes its references suspects, confirmed by their text below. A send keeps the index for
  // resume and the cross-run check.
  const refs = new RefIndex();
  const lookalikes = new LookalikeReferences(opts.warn);
  const claim = (ref: string, place: RowPlace): void => {
    refs.add(ref);
    lookalikes.see(ref, place);
  };
  let totals = new CurrencyTotals();
  const first: PayoutRequest[] = [];
  const metas: Array<{ batch_reference?: string; webhook_url?: string }> = [];
  let payoutCount = 0;
  for (const source of sources) {
    const meta = await readPayouts(source, opts.intake, {
      refused(ref, file, location) {
        // A refused row still claims its reference: a later duplicate is reported now.
        claim(ref, { file, location });
      },
      payout(p) {
        const hash = opts.withHashes ? hashOf(p) : '';
        claim(p.reference_id, p);
        opts.spool?.add(toPayoutRequest(p), hash);
        totals.add(p.currency, p.amount.minor);
        payoutCount += 1;
        if (first.length < opts.chunkSize) first.push(toPayoutRequest(p));
      },
      problem: (p) => problems.add(p),
      warning: opts.warn,
    });
    metas.push(meta);
  }
  refs.seal();
  ({ problems, totals } = await confirmByText(sources, opts, {
    refs,
    lookalikes,
    problems,
    totals,
  }));
  for (const p of checkMaxTotals(totals, opts.maxTotals, opts.currencies)) problems.add(p);
  if (problems.total > 0) throw problems.toError();
  const batchReference = pickFileValue(
    opts.batchReference,
    metas.map((m) => m.batch_reference),
    'batch_reference',
  );
  const webhookUrl = pickFileValue(
    opts.webhookUrl,
    metas.map((m) => m.webhook_url),
    'webhook_url',
  );
  const firstRequest: CreateRequest = { payouts: first };
  if (webhookUrl !== undefined) firstRequest.webhook_url = webhookUrl;
  if (batchReference !== undefined) firstRequest.batch_reference = batchReference;
  return {
    sources,
    payoutCount,
    totals,
    requestCount: Math.ceil(payoutCount / opts.chunkSize),
    batchReference,
    webhookUrl,
    inputHash: combinedHash(sources.map((s) => s.digest())),
    refs,
    firstRequest,
  };
}
