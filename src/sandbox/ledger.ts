/**
 * The sandbox's persistent state: an append-only NDJSON ledger under `${stateDir}/sandbox/`,
 * shared by every process that runs a sandbox on the same state folder. Each process keeps
 * an in-memory index that it brings up to date by reading only the bytes appended since its
 * last read, so a create costs one append however many payouts the ledger already holds.
 */
import { appendFile, type FileHandle, mkdir, open, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { errorCode } from '../errors.js';
import { formatMinor } from '../money/amount.js';
import { isoMinorUnits } from '../money/currencies.js';
import { acquireLock, type LockOptions } from './lock.js';
import type { PayoutStatus } from './payout-rules.js';

/** A payout as the ledger stores it. */
export interface StoredPayout {
  reference_id: string;
  /** The status given at creation; from settles_at on, the payout reads `later_status`. */
  status: PayoutStatus;
  /** The amount as the request's JSON number, echoed back as is. */
  amount: number;
  /** The exact amount in minor units, as decimal text (BigInt does not go through JSON). */
  minor: string;
  currency: string;
  recipient: string;
  description: string;
  transaction_id: string;
  /** The fee in minor units, as decimal text. */
  charges: string;
  created_at: string;
  /** For payouts that change later (pending ones, returned ones): when they read `later_status`. */
  settles_at?: string;
  /** What the payout reads from settles_at on; absent in older lines: success. */
  later_status?: PayoutStatus;
  batch_reference: string;
  message?: string;
}

/** One line of the ledger file. */
export type LedgerLine =
  | ({ t: 'payout' } & StoredPayout)
  | { t: 'duplicate'; reference_id: string; at: string };

/** What the index knows of one reference. */
export class LedgerEntry {
  /** How many times a payout line was written for this reference: 1 unless something broke. */
  applied = 1;
  /** How many create requests reused this reference after it was stored. */
  duplicateAttempts = 0;
  private parsed: StoredPayout | undefined;

  constructor(private readonly source: string | StoredPayout) {}

  /** The stored payout, parsed on first use: most entries of a large ledger are never read. */
  get payout(): StoredPayout {
    this.parsed ??=
      typeof this.source === 'string' ? (JSON.parse(this.source) as StoredPayout) : this.source;
    return this.parsed;
  }
}

/** The payout record of the status endpoint and of webhooks (interface 2.5). */
export interface PayoutRecord {
  reference_id: string;
  status: PayoutStatus;
  amount: number;
  currency: string;
  created_at: string;
  updated_at: string;
  transaction_id: string;
  recipient: string;
  description: string;
}

/** A ledger entry as readSandboxLedger reports it to tests. */
export interface LedgerSummary {
  applied: number;
  duplicateAttempts: number;
  /** The status a status request would read now. */
  status: string;
  /** The exact amount as a plain decimal without trailing zeros: 125.500 BHD -> "125.5". */
  amount: string;
  currency: string;
  recipient: string;
}

/** Bytes read per step while catching up, so a large ledger never needs one huge buffer. */
const READ_CHUNK = 1 << 20;

/** How every payout line written by serializeLine starts. */
const PAYOUT_HEAD = '{"t":"payout","reference_id":"';
/** How every duplicate line written by serializeLine starts. */
const DUPLICATE_HEAD = '{"t":"duplicate","reference_id":"';

/** One ledger line, with `t` and `reference_id` first so readers can index it unparsed. */
export function serializeLine(line: LedgerLine): string {
  const { t, reference_id, ...rest } = line;
  return JSON.stringify({ t, reference_id, ...rest });
}

/**
 * The reference of a line that starts with `head`, read without parsing the whole line
 * (parsing 100,000 lines costs far more than reading them), or undefined.
 */
export function leadingReference(text: string, head: string): string | undefined {
  if (!text.startsWith(head) || !text.endsWith('}')) return undefined;
  let j = head.length;
  while (j < text.length) {
    const c = text.charCodeAt(j);
    if (c === 0x5c) j += 2;
    else if (c === 0x22) break;
    else j += 1;
  }
  if (j >= text.length) return undefined;
  const token = text.slice(head.length - 1, j + 1);
  return token.includes('\\') ? (JSON.parse(token) as string) : token.slice(1, -1);
}

/** The sandbox's folder inside the CLI's state folder. */
export function sandboxDir(stateDir: string): string {
  return join(stateDir, 'sandbox');
}

/** The ledger file's path. */
export function ledgerPath(stateDir: string): string {
  return join(sandboxDir(stateDir), 'ledger.ndjson');
}

/** Whether a payout that changes later has changed by `nowMs`. */
function changed(p: StoredPayout, nowMs: number): boolean {
  return p.settles_at !== undefined && Date.parse(p.settles_at) <= nowMs;
}

/**
 * The status a payout reads as at `nowMs`: from its settles_at on, its `later_status` (a pending one
 * settled, a late failure, a return); a pending line written without `later_status` settles as success.
 */
export function effectiveStatus(p: StoredPayout, nowMs: number): PayoutStatus {
  if (!changed(p, nowMs)) return p.status;
  return p.later_status ?? (p.status === 'pending' ? 'success' : p.status);
}

/** The payout record as the status endpoint answers it at `nowMs`. */
export function payoutRecord(p: StoredPayout, nowMs: number): PayoutRecord {
  const status = effectiveStatus(p, nowMs);
  const settled = changed(p, nowMs) && status !== p.status;
  return {
    reference_id: p.reference_id,
    status,
    amount: p.amount,
    currency: p.currency,
    created_at: p.created_at,
    updated_at: settled ? (p.settles_at as string) : p.created_at,
    transaction_id: p.transaction_id,
    recipient: p.recipient,
    description: p.description,
  };
}

/** The ledger of one sandbox instance: the shared file and this instance's index of it. */
export class Ledger {
  readonly dir: string;
  readonly file: string;
  readonly lockFile: string;
  private readonly entries = new Map<string, LedgerEntry>();
  /** Bytes of the file already applied to the index; always just after a newline. */
  private offset = 0;
  private inode: number | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private corruptLines = 0;

  constructor(
    stateDir: string,
    private readonly log: (line: string) => void = () => {},
    private readonly lockOptions: LockOptions = {},
  ) {
    this.dir = sandboxDir(stateDir);
    this.file = ledgerPath(stateDir);
    this.lockFile = join(this.dir, 'ledger.lock');
  }

  /** Creates the folder (mode 0700) and loads what the file already holds. */
  async open(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await this.refresh();
  }

  /** The entry of a reference, as of the last catch-up. */
  get(referenceId: string): LedgerEntry | undefined {
    return this.entries.get(referenceId);
  }

  /** Every entry, as of the last catch-up. */
  all(): ReadonlyMap<string, LedgerEntry> {
    return this.entries;
  }

  /** Reads the lines other processes appended since the last read. */
  refresh(): Promise<void> {
    return this.enqueue(async () => {
      await this.catchUp();
    });
  }

  /**
   * Under the cross-process lock: catches up with the file, lets `plan` decide what to
   * write knowing every reference stored so far, and appends its lines in one write.
   */
  commit<T>(plan: (stored: (referenceId: string) => boolean) => { lines: LedgerLine[]; value: T }) {
    return this.enqueue(async () => {
      // The folder may have been removed to reset the sandbox while it ran.
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      const release = await acquireLock(this.lockFile, this.lockOptions);
      try {
        const endsWithNewline = await this.catchUp();
        if (!endsWithNewline) {
          // A writer died mid-append: its fragment is no payout. Readers never consume a
          // line before its newline, so cutting it off here is invisible to them.
          this.log(`ledger ${this.file}: removed an incomplete last line left by a dead writer`);
          await truncate(this.file, this.offset);
        }
        const { lines, value } = plan((ref) => this.entries.has(ref));
        if (lines.length > 0) {
          await appendFile(this.file, `${lines.map(serializeLine).join('\n')}\n`, { mode: 0o600 });
          await this.catchUp();
        }
        return value;
      } finally {
        await release();
      }
    });
  }

  /** Resolves once every queued read and commit has finished. */
  async idle(): Promise<void> {
    await this.queue;
  }

  /** Runs `task` after every earlier task of this instance: one reader or writer at a time. */
  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Forgets the index, for a file that was replaced or truncated. */
  private reset(): void {
    this.entries.clear();
    this.offset = 0;
    this.corruptLines = 0;
  }

  /**
   * Applies the complete lines appended since the last read. Returns whether the file ends
   * with a newline (false while a fragment of a line is at its end).
   */
  private async catchUp(): Promise<boolean> {
    let fh: FileHandle;
    try {
      fh = await open(this.file, 'r');
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error;
      if (this.offset > 0) this.reset();
      this.inode = undefined;
      return true;
    }
    try {
      const st = await fh.stat();
      if (st.ino !== this.inode || st.size < this.offset) {
        if (this.inode !== undefined) this.log(`ledger ${this.file} was replaced: reloading it`);
        this.reset();
        this.inode = st.ino;
      }
      const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK, Math.max(1, st.size - this.offset)));
      let carry = Buffer.alloc(0);
      let position = this.offset;
      while (position < st.size) {
        const want = Math.min(chunk.length, st.size - position);
        const { bytesRead } = await fh.read(chunk, 0, want, position);
        if (bytesRead === 0) break;
        position += bytesRead;
        const fresh = chunk.subarray(0, bytesRead);
        const data = carry.length > 0 ? Buffer.concat([carry, fresh]) : fresh;
        let start = 0;
        let newline = data.indexOf(10, start);
        while (newline !== -1) {
          this.applyLine(data.toString('utf8', start, newline));
          start = newline + 1;
          newline = data.indexOf(10, start);
        }
        this.offset += start;
        // A copy: `chunk` is reused by the next read.
        carry = Buffer.from(data.subarray(start));
      }
      return this.offset === st.size;
    } finally {
      await fh.close();
    }
  }

  /** Applies one line of the file to the index; unreadable lines are counted and skipped. */
  private applyLine(text: string): void {
    const payoutRef = leadingReference(text, PAYOUT_HEAD);
    if (payoutRef !== undefined) {
      this.addPayout(payoutRef, text);
      return;
    }
    const duplicateRef = leadingReference(text, DUPLICATE_HEAD);
    if (duplicateRef !== undefined) {
      this.addDuplicate(duplicateRef);
      return;
    }
    // Lines in another key order (edited by hand, say) take the slow path.
    if (text.trim() === '') return;
    let line: LedgerLine;
    try {
      line = JSON.parse(text) as LedgerLine;
    } catch {
      this.noteCorrupt();
      return;
    }
    if (line?.t === 'payout' && typeof line.reference_id === 'string') {
      this.addPayout(line.reference_id, line);
    } else if (line?.t === 'duplicate' && typeof line.reference_id === 'string') {
      this.addDuplicate(line.reference_id);
    } else {
      this.noteCorrupt();
    }
  }

  /** Records a payout line; a second one for the same reference counts as a double apply. */
  private addPayout(referenceId: string, source: string | StoredPayout): void {
    const entry = this.entries.get(referenceId);
    if (entry) entry.applied += 1;
    else this.entries.set(referenceId, new LedgerEntry(source));
  }

  /** Records a duplicate attempt on a stored reference. */
  private addDuplicate(referenceId: string): void {
    const entry = this.entries.get(referenceId);
    if (entry) entry.duplicateAttempts += 1;
  }

  /** Logs the first unreadable line only, so a damaged file does not flood the log. */
  private noteCorrupt(): void {
    this.corruptLines += 1;
    if (this.corruptLines === 1) this.log(`ledger ${this.file}: skipped an unreadable line`);
  }
}

/** Minor units as the shortest exact decimal: (12550n, 2) -> "125.5", (100n, 2) -> "1". */
export function plainAmount(minor: bigint, digits: number): string {
  const text = formatMinor(minor, digits);
  return text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
}

/** Reads the persisted sandbox state for assertions in tests, cross-process. */
export async function readSandboxLedger(
  stateDir: string,
  nowMs: number = Date.now(),
): Promise<Map<string, LedgerSummary>> {
  const ledger = new Ledger(stateDir);
  await ledger.refresh();
  const out = new Map<string, LedgerSummary>();
  for (const [ref, entry] of ledger.all()) {
    const p = entry.payout;
    out.set(ref, {
      applied: entry.applied,
      duplicateAttempts: entry.duplicateAttempts,
      status: effectiveStatus(p, nowMs),
      amount: plainAmount(BigInt(p.minor), isoMinorUnits(p.currency) ?? 0),
      currency: p.currency,
      recipient: p.recipient,
    });
  }
  return out;
}
