import type { Command } from 'commander';
import type { CommandContext, GlobalOptions, Runtime } from '../context.js';
import { documentHead } from '../core/documents.js';
import { InterruptedError } from '../errors.js';
import { shellWord } from '../output/display.js';
import type { Output } from '../output/output.js';
import { redactWord } from '../state/pg/url.js';

/** A command action: returns the exit code, or throws a typed error. */
export type Action<A extends unknown[], O> = (
  ctx: CommandContext,
  opts: O,
  ...args: A
) => Promise<number>;

/** Receives the exit code of the action that ran. */
export type ExitSink = (code: number) => void;

/** Reads the global options from a command's root. */
function globalsOf(cmd: Command): GlobalOptions {
  const o = cmd.optsWithGlobals<{
    profile?: string;
    baseUrl?: string;
    json?: boolean;
    jsonLines?: boolean;
    debug?: boolean;
    color?: boolean;
  }>();
  return {
    profile: o.profile,
    baseUrl: o.baseUrl,
    // send --json-lines is --json written a line at a time.
    json: Boolean(o.json || o.jsonLines),
    jsonLines: Boolean(o.jsonLines),
    debug: Boolean(o.debug),
    // commander gives --no-color as color: false.
    noColor: o.color === false,
  };
}

/**
 * Builds the Output of a run from the runtime and the global options; `command` (its path,
 * such as "runs show") heads its --json document.
 */
export async function makeOutput(
  runtime: Runtime,
  globals: GlobalOptions,
  command?: string,
): Promise<Output> {
  // Loaded on first use so that --help and --version never pay for them, and chalk only when
  // a stream is a terminal that gets colours.
  const { Output } = await import('../output/output.js');
  const { colorLevel, colourTurnedOff } = await import('../output/colors.js');
  const env = runtime.env;
  const noColor = colourTurnedOff(env, globals.noColor === true);
  const coloured =
    colorLevel(runtime.stdout, noColor, env) || colorLevel(runtime.stderr, noColor, env);
  const chalk = coloured ? (await import('chalk')).Chalk : undefined;
  return new Output({
    stdout: runtime.stdout,
    stderr: runtime.stderr,
    // A getter, so that stdin is only created when a prompt or --from - reads it.
    get stdin() {
      return runtime.stdin;
    },
    json: globals.json,
    lines: globals.jsonLines === true,
    debug: globals.debug,
    noColor,
    env,
    chalk,
    documentHead: command === undefined ? undefined : documentHead(command),
  });
}

/** A command's path below the program, its names joined by spaces: "runs show". */
export function commandPathOf(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Whether `flag` is an option of `cmd` or of a command above it that takes a value. */
function takesValue(cmd: Command, flag: string): boolean {
  for (let c: Command | null = cmd; c; c = c.parent) {
    const o = c.options.find((x) => x.long === flag || x.short === flag);
    if (o) return o.required || o.optional;
  }
  return false;
}

/**
 * The path of the command `argv` runs (see commandPathOf), read from the command tree as
 * commander reads it; a group given alone runs its default command (`payouts runs`: "runs
 * list"). Undefined when argv names no command.
 */
export function commandPathIn(program: Command, argv: readonly string[]): string | undefined {
  let cmd = program;
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    if (word === '--') break;
    if (word.startsWith('-')) {
      if (!word.includes('=') && takesValue(cmd, word)) i += 1;
      continue;
    }
    const sub = cmd.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (!sub) break;
    cmd = sub;
  }
  // commander keeps a group's default command in a field of its own, with no getter.
  const fallback = (cmd as unknown as { _defaultCommandName?: string })._defaultCommandName;
  const dflt = cmd.commands.find((c) => c.name() === fallback);
  if (dflt) cmd = dflt;
  return cmd === program ? undefined : commandPathOf(cmd);
}

/**
 * The commands that act on a stop themselves: `send` lets its requests in flight finish and
 * reports every row, `status` reports the lookups done, `reconcile` keeps and reports them,
 * `sandbox` closes its server. Every other command stops at once (untilStopped).
 */
const OWN_STOPS = new Set(['send', 'status', 'reconcile', 'sandbox']);

/**
 * The command's work, or an InterruptedError (exit 130) as soon as `stop` fires, so that a
 * command waiting on a database, a lock or a server never outlasts a Ctrl-C. What it was
 * changing is whole or not made: each change is one transaction or one renamed file.
 */
function untilStopped(work: Promise<number>, stop: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    const onStop = () => reject(new InterruptedError('interrupted: stopped before it finished'));
    if (stop.aborted) onStop();
    else stop.addEventListener('abort', onStop, { once: true });
    work.then(resolve, reject).finally(() => stop.removeEventListener('abort', onStop));
  });
}

/** Attaches an action that gets a CommandContext and reports its exit code. */
export function defineAction<A extends unknown[], O>(
  cmd: Command,
  runtime: Runtime,
  sink: ExitSink,
  action: Action<A, O>,
): Command {
  return cmd.action(async (...received: unknown[]) => {
    // commander passes the positional arguments, then the options, then the command.
    const self = received[received.length - 1] as Command;
    const opts = received[received.length - 2] as O;
    const args = received.slice(0, -2) as A;
    const globals = globalsOf(self);
    const path = commandPathOf(self);
    const output = await makeOutput(runtime, globals, path);
    const ctx: CommandContext = { runtime, globals, output };
    const work = action(ctx, opts, ...args);
    sink(await (OWN_STOPS.has(path) ? work : untilStopped(work, runtime.interrupt)));
  });
}

/** Formats example lines for --help. */
export function examples(...lines: string[]): string {
  return `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;
}

/** Collects a repeatable option's values. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** The words of one option as given: the flag, then its value (each value, when repeated). */
function optionWords(c: Command, o: Command['options'][number]): string[] {
  const flag = o.long ?? o.short ?? '';
  const value: unknown = c.getOptionValue(o.attributeName());
  if (typeof value === 'boolean') return [flag];
  const values = Array.isArray(value) ? value : [value];
  return values.flatMap((v) => [flag, String(v)]);
}

/**
 * The words of those of `longs` (such as "--encoding") given on the command line, in the
 * command's order, each value as parsed (unquoted): for a next step that repeats them. They
 * are recorded where others read them (runs.send_args), so a URL's password is masked (a
 * --webhook-url of user:token shows user:***, which `send` refuses until it is given again).
 */
export function givenOptionWords(cmd: Command, longs: readonly string[]): string[] {
  return cmd.options
    .filter((o) => o.long !== undefined && longs.includes(o.long))
    .filter((o) => cmd.getOptionValueSource(o.attributeName()) === 'cli')
    .flatMap((o) => optionWords(cmd, o))
    .map(redactWord);
}

/**
 * A command as the user typed it, rebuilt from what commander parsed: the command's names,
 * its operands, then each option given on the command line, its own and its parents', with
 * every password a URL or value carries masked.
 */
export function commandLineOf(cmd: Command, operands: readonly string[]): string {
  const chain: Command[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) chain.unshift(c);
  const words = [...chain.map((c) => c.name()), ...operands];
  for (const c of chain) {
    for (const o of c.options) {
      if (c.getOptionValueSource(o.attributeName()) === 'cli') words.push(...optionWords(c, o));
    }
  }
  // Recorded in lock rows others can read and shown in their messages: no password (issue 48).
  return words.map((w) => shellWord(redactWord(w))).join(' ');
}
