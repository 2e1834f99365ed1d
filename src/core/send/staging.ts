/**
 * What a send needs from its surroundings, and its rows from the files to the staging area of
 * the history they are checked against, until the run adopts them.
 */
import { join } from 'node:path';
import type { RetryPolicy } from '../../api/retry.js';
import { type Clock, systemClock } from '../../clock.js';
import type { HistoryStore, RunClaims } from '../../domain/history.js';
import { UsageError } from '../../errors.js';
import type { IntakeOptions } from '../../input/index.js';
import type { CurrencyTable } from '../../money/currencies.js';
import type { InStream, Output } from '../../output/output.js';
import { lockWaitOf } from '../../state/db.js';
import type { RunIntake } from '../../state/index.js';
import type { PgHistory } from '../../state/pg/history.js';
import { localHistory } from '../../state/local-history.js';
import {
  builtWriterThread,
  dropWriterThread,
  type StateWriter,
  writerFor,
} from '../../state/writer.js';
import type { ServiceConnection } from '../service.js';
import type { SendOptions } from './options.js';
import type { RunPlan } from './plan.js';
import { type HashedSource, hashedFileSource, spoolStdin } from './plan.js';

/** What `send` needs from its surroundings; it reads nothing from the process itself. */
export interface SendDeps {
  output: Output;
  stdin: InStream;
  stateDir: string;
  /** The config folder: with the state folder, where no report may be written. */
  configDir?: string;
  /** Where the files named on the command line are (default: the process's folder). */
  cwd?: string;
  pid: number;
  interrupt: AbortSignal;
  /** Aborted when the run is to end now, without waiting for its requests in flight. */
  finishNow?: AbortSignal;
  /** The command line, recorded in the run lock so a second run can name the first. */
  commandLine: string;
  /** The options that name this run's service for another command (--sandbox, --profile NAME). */
  serviceArgs?: string[];
  /**
   * The options the files were read and are sent with, as given (--encoding windows-1252,
   * --decimal-comma, --map …, --batch-reference …): a next step's send command repeats them.
   */
  fileArgs?: string[];
  /** Connects to the service (or the sandbox); called only when something will be sent. */
  connect: () => Promise<ServiceConnection>;
  /** Where a dry run would send, which needs no credentials; the key when the service is known. */
  preview: () => Promise<{ baseUrl?: string; profile?: string; serviceKey?: string }>;
  retry?: RetryPolicy;
  /** Time for retry waits and read-back timing; the real clock unless a test passes one. */
  clock?: Clock;
  /** A shared history (postgres://…) to use instead of the state folder's state.db. */
  stateUrl?: string;
  /** A session open on that history (send --approved's), which the send uses and leaves open. */
  session?: PgHistory;
  /** The user and host a shared history's lock names (tests pretend to be another machine). */
  lockHolder?: { host?: string; user?: string };
  /** The input's name when it is an approved run's payouts (`approved:RUN`). */
  approvedName?: string;
  /** How long state.db is waited for while another program holds it locked (default 30 s). */
  stateWait?: { noticeMs: number; waitMs: number };
}

/** Builds the sources of a run; standard input is copied to a file, whose bytes are hashed as the files' are. */
export async function openSources(
  files: string[],
  deps: SendDeps,
  hashing: boolean,
): Promise<{ sources: HashedSource[]; cleanup(): void }> {
  const cleanups: Array<() => void> = [];
  const sources: HashedSource[] = [];
  if (files.filter((f) => f === '-').length > 1)
    throw new UsageError('standard input ("-") can be read only once per run');
  for (const file of files) {
    if (file === '-') {
      const spool = await spoolStdin(deps.stdin, join(deps.stateDir, 'tmp'), deps.pid);
      cleanups.push(spool.remove);
      sources.push(hashedFileSource(spool.path, '-', hashing));
    } else {
      // An approved run's payouts come from the history: named by the run, not the spool file.
      const name = deps.approvedName ?? file;
      sources.push(hashedFileSource(file, name, hashing));
    }
  }
  return {
    sources,
    cleanup: () => {
      for (const c of cleanups) c();
    },
  };
}

/**
 * A run's rows as pass 1 stages them, until the run adopts them (in state.db, or in a private
 * database for a dry run or a shared history), and the history they are checked against.
 */
export interface Staging {
  rows: RunIntake;
  /** Adopted by the run: not to be discarded. */
  kept: boolean;
  history: HistoryStore<RunIntake>;
  /** A shared history's session: its approval rule and approvals are read and kept there too. */
  shared?: PgHistory;
  /** Where a send's commits go: its thread starts while pass 1 reads (a dry run has none). */
  writer?: StateWriter;
}

/**
 * What every step of a send reads, passed from step to step as it is: the options and what the
 * send needs from outside, what pass 1 learnt of the files, the staged rows and their history.
 */
export interface SendContext {
  opts: SendOptions;
  deps: SendDeps;
  output: Output;
  currencies: CurrencyTable;
  plan: RunPlan;
  staging: Staging;
  /** A send's claims on the runs it decides (RunClaims): taken as it reads the history. */
  claims?: RunClaims;
}

/** Opens the history of a send (the state folder's, or a shared one) and stages its rows there. */
export async function stage(opts: SendOptions, deps: SendDeps): Promise<Staging> {
  // The writer thread of state.db starts first: it loads its code while state.db is opened.
  const thread = opts.dryRun || deps.stateUrl ? undefined : builtWriterThread();
  const pg = deps.stateUrl ? await import('../../state/pg/store.js') : undefined;
  const shared = deps.session
    ? pg?.sharedStore(deps.session, deps.lockHolder ?? {}, false)
    : deps.stateUrl
      ? await pg?.sharedHistory(deps.stateUrl, deps.lockHolder, deps.interrupt)
      : undefined;
  const history =
    shared ??
    localHistory(deps.stateDir, {
      notice: (m) => deps.output.warn(m),
      countdown: (ms) =>
        deps.output.countdown('state.db locked by another program, giving up in', ms),
      ...deps.stateWait,
    });
  try {
    const now = new Date((deps.clock ?? systemClock).now());
    const how = { dryRun: opts.dryRun, pid: deps.pid, inputs: opts.files, now };
    const rows = await history.stage(how);
    const writer = opts.dryRun ? undefined : writerFor(rows.db, lockWaitOf(rows.db), thread);
    // Its thread hashes and writes the rows on the other core while this one reads the files.
    if (writer?.stager) rows.handTo(writer.stager);
    return {
      rows,
      kept: false,
      history,
      ...(shared ? { shared: shared.session } : {}),
      ...(writer ? { writer } : {}),
    };
  } catch (err) {
    dropWriterThread(thread);
    await history.close();
    throw err;
  }
}

/** How pass 1 reads the files. */
export function intakeOf(opts: SendOptions, currencies: CurrencyTable): IntakeOptions {
  const { format, sheet, includeHidden, delimiter, map, encoding, decimalComma } = opts;
  return { format, sheet, includeHidden, delimiter, map, encoding, decimalComma, currencies };
}

/** Drops the rows of a run that never began (and its writer), and closes their database. */
export async function endStaging(staging: Staging, failed: boolean): Promise<void> {
  try {
    if (!staging.kept) {
      await staging.writer?.close();
      staging.rows.discard();
    }
  } catch (error) {
    // The error that stopped the run is the one to report, not what it left in its way.
    if (!failed) throw error;
  } finally {
    if (staging.rows.db.open) staging.rows.db.close();
  }
}

/**
 * The service of a send, connected while pass 1 reads the files (loading the HTTP client
 * and the credentials meanwhile); its failure is reported only when the run asks for it,
 * after the files were found sound, and it is closed when no run took it.
 */
export class EarlyService {
  private taken = false;
  private readonly opening: Promise<ServiceConnection>;

  constructor(connect: () => Promise<ServiceConnection>) {
    this.opening = connect();
    this.opening.catch(() => {});
  }

  /** The connection, now the run's to close. */
  take(): Promise<ServiceConnection> {
    this.taken = true;
    return this.opening;
  }

  /** Closes the connection when no run took it; a failure to open was never the run's. */
  async drop(): Promise<void> {
    if (this.taken) return;
    this.taken = true;
    await this.opening.then(
      (service) => service.close(),
      () => {},
    );
  }
}
