import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import type { ExitSink } from '../command.js';

/** Registers `payouts template` (placeholder). */
export function registerTemplate(program: Command, _runtime: Runtime, _sink: ExitSink): void {
  program.command('template').description('template');
}
