import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import type { ExitSink } from '../command.js';
import { registerStatePush } from './push.js';

/** Registers `payouts state` and its subcommands. */
export function registerState(program: Command, runtime: Runtime, sink: ExitSink): void {
  const state = program
    .command('state')
    .description("the history of what was sent: copy this folder's into a shared one");
  registerStatePush(state, runtime, sink);
}
