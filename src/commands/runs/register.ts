import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import type { ExitSink } from '../command.js';

/** Registers `payouts runs` and its subcommands (placeholder). */
export function registerRuns(program: Command, _runtime: Runtime, _sink: ExitSink): void {
  program.command('runs').description('runs');
}
