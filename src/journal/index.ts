/** The write-ahead run journal and the send lock: no payout is ever sent twice. */
export { JournalCorruptError } from './errors.js';
export { payoutHash, runIdFor, serviceId } from './ids.js';
export {
  type OpenJournalOptions,
  type OutcomeResult,
  type RunHeader,
  RunJournal,
} from './journal.js';
export { type AcquireLockOptions, isPidAlive, type LockInfo, RunLock } from './lock.js';
export { listRuns, type RunDetail, type RunSummary, readRun } from './runs.js';
export { type ScanHit, type ScanOptions, scanServiceJournals } from './scan.js';
export type { RefState } from './state.js';
