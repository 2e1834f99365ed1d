/**
 * Which hang-ups and gone parents stop a run (docs/stopping.md): what a person meant, read
 * from the process at start. Only src/cli.ts uses it; it reads /proc (Linux) and file
 * descriptors, never the network.
 */
import { closeSync, openSync, readFileSync, readlinkSync } from 'node:fs';
import { isatty } from 'node:tty';
import { procStat } from './proc.js';

/** A process's command line (for npm, its title: `npm exec …`), or undefined off Linux. */
export function commandLine(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .filter((arg) => arg !== '');
  } catch {
    return undefined;
  }
}

/** The parent of a process from /proc (Linux), or undefined where that cannot be read. */
export function parentOf(pid: number): number | undefined {
  return procStat(pid)?.ppid;
}

/** npm, npx, pnpm, yarn and bun, as a program or as the script node runs (npm-cli.js). */
const RUNNER = /^(npm|npx|pnpm|pnpx|yarn|bunx?)(-cli)?(\.c?js)?$/;
const NODE = /^node(js)?[0-9.]*$/;
const SHELL = /^-?(sh|dash|bash|zsh|ksh|mksh|ash)$/;
const base = (path: string) => path.slice(path.lastIndexOf('/') + 1);

/** Whether a command line is a package runner's: `npm exec …` (npx's title), `node …/npm-cli.js`. */
export function isPackageRunner(args: readonly string[]): boolean {
  const program = base((args[0] ?? '').split(' ')[0] ?? '');
  return RUNNER.test(program) || (NODE.test(program) && RUNNER.test(base(args[1] ?? '')));
}

/** Whether a command line is a shell running a command string (`sh -c …`). */
export function isShellCommand(args: readonly string[]): boolean {
  return SHELL.test(base(args[0] ?? '')) && args.slice(1).some((a) => /^-[a-z]*c[a-z]*$/.test(a));
}

/**
 * The processes whose going away stops the run: the package runner that started it (npx and
 * `npm exec` run it through `sh -c`, so a job that kills npm leaves the shell), with that
 * shell. None when anything else started it: a shell, a launcher, nohup or setsid may leave on
 * purpose, and the run then goes on. Off Linux, npm's variable `npm_execpath` stands for the
 * command line, and only the parent is known.
 */
export function ancestorsToWatch(
  ppid: number,
  env: Readonly<Record<string, string | undefined>>,
): number[] {
  const parent = commandLine(ppid);
  if (parent === undefined) return env.npm_execpath ? [ppid] : [];
  if (isPackageRunner(parent)) return [ppid];
  if (!isShellCommand(parent)) return [];
  const grandparent = parentOf(ppid);
  const above = grandparent === undefined ? undefined : commandLine(grandparent);
  return grandparent !== undefined && above && isPackageRunner(above) ? [ppid, grandparent] : [];
}

/**
 * GNU nohup's mark: standard input (a terminal) reopened as /dev/null, write-only, which
 * nothing else does. Node resets an ignored SIGHUP before any JavaScript runs
 * (/proc/self/status shows the same SigIgn with and without nohup), so the mark is read.
 */
function nohupMark(): boolean {
  try {
    if (readlinkSync('/proc/self/fd/0') !== '/dev/null') return false;
    const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync('/proc/self/fdinfo/0', 'utf8'))?.[1];
    return flags !== undefined && (Number.parseInt(flags, 8) & 3) === 1;
  } catch {
    return false;
  }
}

/** Whether the process has a controlling terminal (opening /dev/tty fails without one). */
function hasTerminal(): boolean {
  try {
    closeSync(openSync('/dev/tty', 'r'));
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether the run was detached from its terminal: under nohup, or with a terminal none of its
 * standard streams is on (nohup moves each one off it, whatever standard input was). Then a
 * hang-up is its terminal closing, which the run does not use: it goes on, and so does a gone
 * parent. A run without a terminal (setsid, CI) gets SIGHUP only from a person or a job
 * runner, as a stop.
 */
export function detachedFromTerminal(): boolean {
  if (process.platform === 'win32') return false;
  if (nohupMark()) return true;
  return ![0, 1, 2].some((fd) => isatty(fd)) && hasTerminal();
}
