import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import type { ExitSink } from '../command.js';
import { registerList } from './list.js';
import { registerOff } from './off.js';
import { registerRequire } from './require.js';
import { registerShow } from './show.js';

/** Registers `payouts approvals list|require|off|show`. */
export function registerApprovals(program: Command, runtime: Runtime, sink: ExitSink): void {
  const approvals = program
    .command('approvals')
    .description(
      "another person's approval before a run sends (a shared history only): what awaits yours, the rule",
    );
  registerList(approvals, runtime, sink);
  registerRequire(approvals, runtime, sink);
  registerOff(approvals, runtime, sink);
  registerShow(approvals, runtime, sink);
}
