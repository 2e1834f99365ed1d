import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import type { ExitSink } from '../command.js';
import { registerRunsList } from './list.js';
import { registerRunsShow } from './show.js';

/** Registers `payouts runs` and its subcommands. */
export function registerRuns(program: Command, runtime: Runtime, sink: ExitSink): void {
  const runs = program.command('runs').description('list journaled send runs, or show one');
  registerRunsList(runs, runtime, sink);
  registerRunsShow(runs, runtime, sink);
}
