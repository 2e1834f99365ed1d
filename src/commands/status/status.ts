import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import type { ExitSink } from '../command.js';

/** Registers `payouts status` (placeholder). */
export function registerStatus(program: Command, _runtime: Runtime, _sink: ExitSink): void {
  program.command('status').description('status');
}
