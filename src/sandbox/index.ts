/**
 * The sandbox service: a local implementation of the Payout Service interface over HTTP on
 * loopback, for `payouts send/status --sandbox`, `payouts sandbox` and the tests.
 * See README.md in this folder for its rules.
 */
export { type FaultKind, type FaultRule, parseFaultRule } from './faults.js';
export { type LedgerSummary, ledgerPath, readSandboxLedger, sandboxDir } from './ledger.js';
export {
  SANDBOX_CREDENTIALS,
  type SandboxHandle,
  type SandboxOptions,
  startSandbox,
} from './server.js';
