import { Command, CommanderError, Option } from 'commander';
import { commandPathIn, makeOutput } from './commands/command.js';
import { registerApprovals } from './commands/approvals/approvals.js';
import { registerApprove } from './commands/approve/approve.js';
import { registerCompletion } from './commands/completion/completion.js';
import { registerConfig } from './commands/config/register.js';
import { registerRuns } from './commands/runs/register.js';
import { registerSandbox } from './commands/sandbox/sandbox.js';
import { registerSend } from './commands/send/send.js';
import { registerState } from './commands/state/register.js';
import { registerReconcile } from './commands/reconcile/reconcile.js';
import { registerStatus } from './commands/status/status.js';
import { registerTemplate } from './commands/template/template.js';
import type { GlobalOptions, Runtime } from './context.js';
import { errorDocument } from './core/documents.js';
import {
  errorCode,
  errorMessage,
  formatProblem,
  InputError,
  InternalError,
  InterruptedError,
  OutcomeUnknownError,
  PayoutsError,
  UsageError,
} from './errors.js';
import { ExitCode, exitCodeForError, exitCodesHelp } from './exit-codes.js';
import { count, displayText, wrapText } from './output/display.js';

const MAX_PROBLEMS_SHOWN = 50;

/** The width help is wrapped to: the terminal's, else 80 columns. */
function helpWidth(stream: { isTTY?: boolean; columns?: number }): number {
  return stream.isTTY && stream.columns ? stream.columns : 80;
}

/** "Also: --json, --profile <name>, …": the global options, which every command takes. */
function alsoLine(program: Command): string {
  const flags = program.options
    .filter((o) => o.long !== '--version')
    .map((o) => o.flags.replace(/^-\w, /, ''));
  return `Also takes ${flags.join(', ')}.`;
}

/** Builds the command tree. Actions report their exit code through `sink`. */
export function buildProgram(runtime: Runtime, sink: (code: number) => void): Command {
  const program = new Command('payouts')
    .description('Send payouts through the Payout Service API and check their status.')
    .version(runtime.version, '-V, --version', 'print the version')
    .option('--profile <name>', 'credentials profile to use (default: "default")')
    .option('--base-url <url>', 'service base URL, e.g. https://pay.example.com')
    .option('--json', 'print exactly one JSON document on stdout')
    .option('--debug', 'trace HTTP requests on stderr (the secret is redacted)')
    .addOption(new Option('--no-color', 'no colours').hideHelp())
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({
      writeOut: (s) => runtime.stdout.write(wrapText(s, helpWidth(runtime.stdout))),
      writeErr: (s) => runtime.stderr.write(s),
      getOutHelpWidth: () => helpWidth(runtime.stdout),
      getErrHelpWidth: () => helpWidth(runtime.stderr),
    })
    .exitOverride();
  registerSend(program, runtime, sink);
  registerStatus(program, runtime, sink);
  registerReconcile(program, runtime, sink);
  registerConfig(program, runtime, sink);
  registerSandbox(program, runtime, sink);
  registerTemplate(program, runtime, sink);
  registerRuns(program, runtime, sink);
  registerState(program, runtime, sink);
  registerApprovals(program, runtime, sink);
  registerApprove(program, runtime, sink);
  registerCompletion(program, runtime, sink);
  program.addHelpText(
    'after',
    `
${exitCodesHelp()}In CI a job may see 124 (timeout without --preserve-status) or 143 (npx killed by
SIGTERM) instead of 130: the --json document's exit_code is payouts' own.

Run "payouts <command> --help" for a command's options and examples.`,
  );
  // Every command takes the global options: one line names them, after its own help.
  program.addHelpText('afterAll', ({ command }) => (command === program ? '' : alsoLine(program)));
  return program;
}

/** Reads the global flags from argv when commander could not finish parsing. */
function fallbackGlobals(argv: string[]): GlobalOptions {
  return {
    json: argv.includes('--json') || argv.includes('--json-lines'),
    jsonLines: argv.includes('--json-lines'),
    debug: argv.includes('--debug'),
    noColor: argv.includes('--no-color'),
  };
}

/** Whether argv names no command: nothing, or only global options (and their values). */
function onlyGlobals(argv: readonly string[]): boolean {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--profile' || a === '--base-url') i++;
    else if (!/^--(profile|base-url)=|^--(json|debug|no-color)$/.test(a)) return false;
  }
  return true;
}

/** Runs the CLI and returns its exit code; exiting is left to the entry point (cli.ts). */
export async function main(argv: string[], runtime: Runtime): Promise<number> {
  let code: number = ExitCode.ok;
  const program = buildProgram(runtime, (c) => {
    code = c;
  });
  try {
    // `payouts` alone (or with global options only) prints its help as gh does: stdout, exit 0;
    // under --json stdout holds one document, so it is a usage error there.
    if (onlyGlobals(argv)) {
      if (fallbackGlobals(argv).json) {
        const usage = new UsageError('name a command (`payouts --help` lists them)');
        return reportError(usage, runtime, fallbackGlobals(argv), argv);
      }
      program.outputHelp();
      return ExitCode.ok;
    }
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (
        error.code === 'commander.helpDisplayed' ||
        error.code === 'commander.version' ||
        error.code === 'commander.help'
      ) {
        return ExitCode.ok;
      }
      // commander has said what is wrong on stderr; under --json the document says it too.
      if (fallbackGlobals(argv).json) {
        const usage = new UsageError(error.message.replace(/^error: /, ''));
        const output = await makeOutput(runtime, fallbackGlobals(argv));
        output.printJson(errorDocument(argv, usage, ExitCode.usage, commandPathIn(program, argv)));
      }
      return ExitCode.usage;
    }
    return reportError(error, runtime, fallbackGlobals(argv), argv);
  }
}

/** What stopped a run whose event loop emptied before main settled. */
export const UNFINISHED =
  'the run stopped with work unfinished: it was waiting for something that can no longer happen (please report this, with the command and its --debug output)';

/**
 * Reports a run whose event loop emptied while main had not settled (nothing left could
 * settle it): an internal error on stderr, and as the error document under --json. Returns
 * the exit code, which is never 0, since whatever the run was doing did not finish.
 */
export function reportUnfinished(argv: string[], runtime: Runtime): Promise<number> {
  return reportError(new InternalError(UNFINISHED), runtime, fallbackGlobals(argv), argv);
}

/** What the process says when it exits before the run could report. */
export const STOPPED_AT_ONCE =
  'stopped at once, before the run could report its rows: `payouts runs` lists what was sent, and the next run reads back the payouts in doubt before sending anything';

/**
 * Reports a run the process ends before it reported (a third stop, or reporting that hung):
 * the interruption on stderr, and its error document under --json unless one was begun.
 */
export function reportStopped(argv: string[], runtime: Runtime): Promise<number> {
  return reportError(new InterruptedError(STOPPED_AT_ONCE), runtime, fallbackGlobals(argv), argv);
}

/**
 * Prints an error on stderr (and as the JSON document of the command `argv` names under
 * --json) and maps it to an exit code.
 */
export async function reportError(
  error: unknown,
  runtime: Runtime,
  globals: GlobalOptions,
  argv: readonly string[] = [],
): Promise<number> {
  const output = await makeOutput(runtime, globals);
  const exitCode = exitCodeForError(error);
  const message = errorMessage(error);
  const lines: string[] = [];
  if (error instanceof InputError) {
    for (const p of error.problems.slice(0, MAX_PROBLEMS_SHOWN)) lines.push(formatProblem(p));
    const rest = error.totalProblems - Math.min(error.problems.length, MAX_PROBLEMS_SHOWN);
    if (rest > 0) lines.push(`… and ${count(rest, 'more problem')}`);
  }
  if (error instanceof OutcomeUnknownError) {
    lines.push(...error.references.map((r) => `  outcome unknown: ${displayText(r)}`));
  }
  for (const line of lines) output.info(line);
  output.error(
    error instanceof InternalError ||
      (exitCode === ExitCode.internal && !(error instanceof PayoutsError))
      ? `internal error: ${message}`
      : message,
  );
  // Library codes (UND_ERR_…, SQLITE_…) mean something to a developer only.
  const code = errorCode(error);
  if (code) output.debug(`error code: ${code}`);
  if (globals.debug && error instanceof Error && error.stack) output.debug(error.stack);
  // The library's own error and code (SQLITE_BUSY, EACCES): for --debug only.
  const cause = error instanceof Error ? error.cause : undefined;
  if (globals.debug && cause instanceof Error) {
    output.debug(`caused by ${cause.name} ${errorCode(cause) ?? ''}: ${cause.message}`);
  }
  // An error after the run printed its document (closing the connection) is told on stderr.
  const { jsonWritten } = await import('./output/output.js');
  if (globals.json && !jsonWritten(runtime.stdout)) {
    // A tree of its own names the command: reportError is also called without main's.
    const path = commandPathIn(
      buildProgram(runtime, () => {}),
      argv,
    );
    output.printJson(errorDocument(argv, error, exitCode, path));
  }
  return exitCode;
}
