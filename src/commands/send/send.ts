import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import type { ExitSink } from '../command.js';

/** Registers `payouts send` (placeholder). */
export function registerSend(program: Command, _runtime: Runtime, _sink: ExitSink): void {
  program.command('send').description('send');
}
