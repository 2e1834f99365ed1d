/** The run's state in one SQLite database: payouts as rows, written ahead of every request. */
export { openDatabase, openScratchDb, openStateDb, STATE_DB, type StateDb } from './db.js';
export { HASH_VERSION, payoutHash, runIdFor, serviceId } from './hash.js';
export { type Place, RunIntake, type Sighting } from './intake.js';
export type { IntakeRow } from './row-tables.js';
export type { OutcomeResult } from './outcome-result.js';
export type { ChargeMinor } from './outcome-tally.js';
export { type ReportRow, RunOutcomes } from './outcomes.js';
export {
  type OpenRunOptions,
  type RunPayout,
  RunState,
} from './run-state.js';
export {
  hasHistory,
  priorRows,
  pushedHistory,
  stagedAmountsTo,
  stagedLocations,
  stagedPages,
  stagedRecipients,
  stagedPayouts,
  type StagedRetry,
  stagedRetries,
} from './prior.js';
export type { PgHistory } from './pg/history.js';
export { failureReasons, heldAmong, retryLinks } from './retry-links.js';
export {
  listRunsIn,
  liveRunsIn,
  type PayoutState,
  type RowReader,
  type RunDetail,
  type RunSummary,
  readRunIn,
  type RowWriter,
  type RunsPage,
  runOfPrefix,
  runPageIn,
  runsByIdIn,
  stateDbKeeper,
} from './runs.js';
export { isNear, nearReferences } from './near.js';
export { acquireSendLock, type SendLockOptions, sendLockPath } from './send-lock.js';
export { privateTmp } from './tmp.js';
export {
  type HeldColumns,
  HELD_COLUMNS,
  type HeldPayout,
  heldPayoutOf,
  heldPayouts,
  type HeldReference,
  heldReferences,
  recordChecks,
} from './checks.js';
export {
  heldOfPage,
  type ScopePayout,
  type ScopeRun,
  scopeCount,
  scopePage,
  scopeRuns,
} from './scope.js';
export { rowWriterOf, stateDbWriter } from './run-counts.js';
