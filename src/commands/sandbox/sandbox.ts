import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import type { ExitSink } from '../command.js';

/** Registers `payouts sandbox` (placeholder until the sandbox lands). */
export function registerSandbox(program: Command, _runtime: Runtime, _sink: ExitSink): void {
  program.command('sandbox').description('run the local sandbox service');
}
