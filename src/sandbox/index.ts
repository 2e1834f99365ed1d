/**
 * The sandbox service: a local implementation of the Payout Service interface over HTTP on
 * loopback, for `payouts send/status --sandbox`, `payouts sandbox` and the tests.
 * Its rules are documented in docs/sandbox.md.
 */
export { type FaultKind, type FaultRule, parseFaultRule } from './faults.js';
export { type LedgerSummary, ledgerPath, readSandboxLedger, sandboxDir } from './ledger.js';
export { SANDBOX_CREDENTIALS } from './router.js';
export { type SandboxHandle, type SandboxOptions, startSandbox } from './server.js';
export {
  BUILT_IN_TRIGGERS,
  delayText,
  parseTriggerList,
  parseTriggerRule,
  type TriggerRule,
  triggerJson,
  triggerText,
} from './triggers.js';
