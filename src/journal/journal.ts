import { writeSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { JournalCorruptError } from './errors.js';
import { ensureServiceDir, errorCode, FILE_MODE, syncDir } from './fsutil.js';
import { isValidRunId } from './ids.js';
import { readJournalFile } from './reader.js';
import {
  formatRecord,
  isWritableRecord,
  JOURNAL_VERSION,
  type JournalRecord,
  type OutcomeTuple,
  type RunRecord,
} from './records.js';
import { type RefState, RefTable } from './state.js';

/** What the caller knows about a run when it opens its journal. */
export interface RunHeader {
  service: string;
  client_id: string;
  inputs: string[];
  input_hash: string;
  payout_count: number;
  batch_reference?: string;
}

/** One per-payout result of the service, as recorded in an outcome. */
export interface OutcomeResult {
  ref: string;
  status: string;
  transaction_id?: string;
  charges?: number;
  amount?: number;
  currency?: string;
  message?: string;
}

/** Options of RunJournal.open. */
export interface OpenJournalOptions {
  stateDir: string;
  serviceKey: string;
  runId: string;
  header: RunHeader;
  now?: () => Date;
}

/** A promise with its settle functions, shared by every caller of one group commit. */
interface Batch {
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Makes a batch whose rejection is never reported as unhandled before someone awaits it. */
function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/**
 * The write-ahead journal of one run. Intents are durable before their request is sent; outcomes
 * are buffered and ride along with the next write. One append handle, one writer at a time:
 * intents recorded while a write is under way share the next write and fsync (group commit).
 */
export class RunJournal {
  private pending: string[] = [];
  private batch: Batch | undefined;
  private tail: Promise<void> = Promise.resolve();
  private failure: unknown;
  private closing = false;
  private closed: Promise<void> | undefined;
  private syncs = 0;
  private readonly intentReqs = new Set<number>();
  private tracking = true;

  private constructor(
    readonly runId: string,
    readonly path: string,
    readonly resumed: boolean,
    private readonly fh: FileHandle,
    private readonly table: RefTable,
    private readonly now: () => Date,
  ) {}

  /** Creates a run's journal (header written and fsynced) or loads the existing one. */
  static async open(opts: OpenJournalOptions): Promise<RunJournal> {
    if (!isValidRunId(opts.runId)) throw new Error(`invalid run id: ${JSON.stringify(opts.runId)}`);
    const now = opts.now ?? (() => new Date());
    const dir = await ensureServiceDir(opts.stateDir, opts.serviceKey);
    const path = join(dir, `${opts.runId}.ndjson`);
    const header = headerRecord(opts.runId, opts.header, now());
    let fh: FileHandle;
    try {
      // 'ax' creates exclusively, so of two openers only one writes a header.
      fh = await open(path, 'ax', FILE_MODE);
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw err;
      return RunJournal.load(opts, path, header, now);
    }
    try {
      await fh.chmod(FILE_MODE);
      await writeAll(fh, Buffer.from(formatRecord(header)));
      await fh.datasync();
      // The folders may be new too: their entries must survive a power cut with the file.
      for (const d of [dir, dirname(dir), opts.stateDir]) await syncDir(d);
    } catch (err) {
      await fh.close();
      throw err;
    }
    const journal = new RunJournal(opts.runId, path, false, fh, new RefTable(), now);
    journal.syncs = 1;
    return journal;
  }

  /** Loads an existing journal, repairs a torn tail, and opens it for appending. */
  private static async load(
    opts: OpenJournalOptions,
    path: string,
    header: RunRecord,
    now: () => Date,
  ): Promise<RunJournal> {
    const table = new RefTable();
    const intentReqs: number[] = [];
    let found: RunRecord | undefined;
    const read = await readJournalFile(path, (rec) => {
      if (rec.t === 'run') found = rec;
      else table.apply(rec);
      if (rec.t === 'intent') intentReqs.push(rec.req);
    });
    if (found && found.run_id !== opts.runId) {
      throw new JournalCorruptError(path, 1, `belongs to run ${found.run_id}, not ${opts.runId}`);
    }
    if (found && found.input_hash !== opts.header.input_hash) {
      throw new JournalCorruptError(path, 1, 'was written for other input files');
    }
    const fh = await open(path, 'a', FILE_MODE);
    let syncs = 0;
    try {
      if (!found) {
        // A crash before the header was durable: no intent can follow it, so start afresh.
        await fh.truncate(0);
        await writeAll(fh, Buffer.from(formatRecord(header)));
        await fh.datasync();
        syncs += 1;
      } else if (read.torn || read.missingNewline) {
        // Appending after a torn line would bury it mid-file, where it reads as damage.
        if (read.torn) await fh.truncate(read.validBytes);
        if (read.missingNewline) await writeAll(fh, Buffer.from('\n'));
        await fh.datasync();
        syncs += 1;
      }
    } catch (err) {
      await fh.close();
      throw err;
    }
    const journal = new RunJournal(opts.runId, path, found !== undefined, fh, table, now);
    journal.syncs = syncs;
    for (const req of intentReqs) journal.intentReqs.add(req);
    return journal;
  }

  /** State of each reference seen in this journal (only refs that appear). */
  stateOf(ref: string): RefState | undefined {
    return this.table.get(ref)?.state;
  }

  /** Every reference this journal names, with its state, in order of first appearance. */
  *states(): Generator<[string, RefState]> {
    for (const [ref, t] of this.table.entries()) yield [ref, t.state];
  }

  /** Refs of this journal in flight (sent, outcome not known), for resume. */
  inFlight(): Array<{ ref: string; req: number; hash: string }> {
    const out: Array<{ ref: string; req: number; hash: string }> = [];
    for (const [ref, t] of this.table.entries()) {
      if (t.state.state === 'in-flight') out.push({ ref, req: t.state.req, hash: t.state.hash });
    }
    return out;
  }

  /**
   * Stops keeping per-reference states in memory: once a run has read what earlier attempts
   * left, the states are no longer asked for, and on a large run they are its biggest object.
   */
  releaseStates(): void {
    this.tracking = false;
    this.table.clear();
  }

  /** Highest request id used so far, so a resumed run numbers new requests after it. */
  get lastRequestId(): number {
    return this.table.lastRequestId;
  }

  /** Number of fsyncs of the journal file so far (header included), to measure group commit. */
  get syncCount(): number {
    return this.syncs;
  }

  /** Durable: resolves only after the intent line is on disk; concurrent calls share one fsync. */
  recordIntent(req: number, items: Array<{ ref: string; hash: string }>): Promise<void> {
    try {
      this.assertOpen();
      if (!Number.isSafeInteger(req) || req < 0) throw new Error(`invalid request id ${req}`);
      if (this.intentReqs.has(req)) throw new Error(`request id ${req} is already used`);
      if (items.length === 0) throw new Error('an intent needs at least one payout');
      if (this.failure !== undefined) throw this.failure;
      this.append({
        t: 'intent',
        req,
        at: this.now().toISOString(),
        p: items.map((i) => [i.ref, i.hash]),
      });
    } catch (err) {
      return Promise.reject(err);
    }
    this.intentReqs.add(req);
    return this.commit();
  }

  /** Buffered: appended with the next write, flush or close; losing it in a crash is safe. */
  recordOutcome(req: number, results: OutcomeResult[]): void {
    this.assertOpen();
    if (results.length === 0) return;
    // outcomeTuple makes every tuple valid whatever the service sent: no check is needed.
    this.append(
      { t: 'outcome', req, at: this.now().toISOString(), r: results.map(outcomeTuple) },
      true,
    );
  }

  /** Buffered: the request provably did not apply, so its refs are free to send again. */
  recordNotApplied(req: number, refs: string[], why: string): void {
    this.assertOpen();
    if (refs.length === 0) return;
    this.append({ t: 'not_applied', req, at: this.now().toISOString(), refs, why });
  }

  /** Buffered: the outcome of these refs could not be established; they stay in flight. */
  recordUnknown(refs: string[], why: string): void {
    this.assertOpen();
    if (refs.length === 0) return;
    this.append({ t: 'unknown', at: this.now().toISOString(), refs, why });
  }

  /** Writes and fsyncs everything buffered. */
  flush(): Promise<void> {
    if (this.pending.length === 0 && !this.batch) {
      // Nothing new: wait for the write under way, and report a failure that already happened.
      return this.tail.then(() => {
        if (this.failure !== undefined) throw this.failure;
      });
    }
    return this.commit();
  }

  /** Flushes and closes the file; later record calls throw. */
  close(): Promise<void> {
    if (!this.closed) {
      this.closing = true;
      this.closed = this.flush().finally(() => this.fh.close());
    }
    return this.closed;
  }

  /** Throws when the journal is closed. */
  private assertOpen(): void {
    if (this.closing) throw new Error(`journal ${this.path} is closed`);
  }

  /** Updates the in-memory states and queues the record's line. */
  private append(rec: JournalRecord, validByConstruction = false): void {
    // A line the reader would reject would make the whole journal unreadable later.
    if (!validByConstruction && !isWritableRecord(rec))
      throw new Error(`invalid journal record: ${JSON.stringify(rec)}`);
    // The state changes at once: a failed write only makes the run more careful, never less.
    if (this.tracking) this.table.apply(rec);
    this.pending.push(formatRecord(rec));
  }

  /** Joins the group commit that has not started yet, or starts one after the current write. */
  private commit(): Promise<void> {
    if (this.batch) return this.batch.promise;
    const batch = newBatch();
    this.batch = batch;
    this.tail = this.tail.then(() => this.runBatch(batch));
    return batch.promise;
  }

  /** Writes every queued line in one write, then one datasync; settles everyone who joined. */
  private async runBatch(batch: Batch): Promise<void> {
    // From here on, new records wait for the next batch.
    this.batch = undefined;
    if (this.failure !== undefined) {
      batch.reject(this.failure);
      return;
    }
    const data = this.pending.join('');
    this.pending = [];
    try {
      if (data.length > 0) {
        // Written at once, synced on the thread pool: a write to the page cache is quick, and
        // an async write cost a second round trip through the pool on every group commit.
        writeAllSync(this.fh.fd, Buffer.from(data));
        await this.fh.datasync();
        this.syncs += 1;
      }
      batch.resolve();
    } catch (err) {
      // The file may now end in a partial line: writing more after it would bury it mid-file.
      this.failure = err;
      batch.reject(err);
    }
  }
}

/** The header record of a new run. */
function headerRecord(runId: string, h: RunHeader, at: Date): RunRecord {
  const rec: RunRecord = {
    t: 'run',
    v: JOURNAL_VERSION,
    run_id: runId,
    service: h.service,
    client_id: h.client_id,
    inputs: h.inputs,
    input_hash: h.input_hash,
    created_at: at.toISOString(),
    payout_count: h.payout_count,
  };
  if (h.batch_reference !== undefined) rec.batch_reference = h.batch_reference;
  return rec;
}

/** One result as an outcome tuple, absent fields as null. */
function outcomeTuple(r: OutcomeResult): OutcomeTuple {
  // The fields come from the service's answer: whatever their runtime type, store a valid tuple.
  return [
    r.ref,
    textOrNull(r.status),
    textOrNull(r.transaction_id),
    finiteOrNull(r.charges),
    finiteOrNull(r.amount),
    textOrNull(r.currency),
    textOrNull(r.message),
  ];
}

/** A finite number, or null (JSON has no NaN or Infinity). */
function finiteOrNull(n: unknown): number | null {
  return typeof n === 'number' && Number.isFinite(n) ? n : null;
}

/** A string as is, a number or boolean as its text, anything else as null. */
function textOrNull(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return null;
}

/** Writes a whole buffer at the file's position, however many write calls it takes. */
function writeAllSync(fd: number, data: Buffer): void {
  let offset = 0;
  while (offset < data.length) offset += writeSync(fd, data, offset, data.length - offset);
}

/** Writes a whole buffer, however many write calls it takes. */
async function writeAll(fh: FileHandle, data: Buffer): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await fh.write(data, offset, data.length - offset);
    offset += bytesWritten;
  }
}
