import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import type { ExitSink } from '../command.js';

/** Registers `payouts config` and its subcommands (placeholder). */
export function registerConfig(program: Command, _runtime: Runtime, _sink: ExitSink): void {
  program.command('config').description('config');
}
