import { closeSync, fstatSync } from 'node:fs';
import type { Runtime } from './context.js';
import { ancestorsToWatch, detachedFromTerminal, parentOf } from './hang-ups.js';
import { main, reportStopped, reportUnfinished } from './main.js';
import { version } from './version.js';

/** The entry point: builds the runtime from the process, runs, and is the only place that exits. */
const interrupt = new AbortController();
const finishNow = new AbortController();
let stops = 0;
let lastStop = 0;
let hungUp = false;

/**
 * Signals this soon after the last counted one are the same stop: timeout(1) signals the
 * process and then its group, and a person's Ctrl-C can bounce.
 */
const SAME_STOP_MS = 1000;
/** After "finish now", how long the run may take to report before the process exits anyway. */
const REPORT_GRACE_MS = 5000;
/** How long the process, exiting at once, may take to print the error document. */
const LAST_WORD_MS = 500;
/** How often a package runner's going is checked: a job runner that kills only `npx` orphans the run. */
const PARENT_CHECK_MS = 250;

/**
 * Exits with the code. After the terminal has gone, its descriptors are closed first: Node 20
 * and 22 abort at exit when they cannot restore a terminal that is no longer there
 * (nodejs/node#51519), and they skip a descriptor that is closed.
 */
function exitWith(code: number): never {
  if (hungUp) {
    for (const fd of [0, 1, 2]) {
      try {
        if (fstatSync(fd).isCharacterDevice()) closeSync(fd);
      } catch {
        // Already closed.
      }
    }
  }
  process.exit(code);
}

/**
 * One stop request: the first stops the run (no new request; those in flight finish); a later
 * one says "finish now" (in-flight requests are reported in doubt, the run reports and ends);
 * a third exits at once, should reporting itself hang.
 */
function stop(): void {
  const now = performance.now();
  if (stops > 0 && now - lastStop < SAME_STOP_MS) return;
  stops += 1;
  lastStop = now;
  if (stops === 1) interrupt.abort();
  else if (stops === 2) {
    finishNow.abort();
    setTimeout(exitAtOnce, REPORT_GRACE_MS);
  } else exitAtOnce();
}

let exiting = false;
/**
 * Exits 130 before the run reported: under --json, the error document still goes out unless
 * the run's own was begun, so a job can read exit_code.
 */
function exitAtOnce(): void {
  if (exiting) return;
  exiting = true;
  setTimeout(() => exitWith(130), LAST_WORD_MS);
  void reportStopped(argv, runtime).then(exitAfterStdout, () => exitWith(130));
}

/**
 * A run detached from its terminal (nohup, or no standard stream on it) goes on when its
 * terminal closes or its parent goes, as a person who detached it means (docs/stopping.md).
 */
const detached = detachedFromTerminal();

const onSignal = (signal: NodeJS.Signals) => {
  if (signal === 'SIGHUP') {
    if (detached) return;
    hungUp = true;
  }
  stop();
};
// Ctrl-C, a cancelled CI job, a closed terminal and Windows' Ctrl-Break all stop the run the
// same way: no new request, those in flight finish, every row reported, exit 130.
const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
if (process.platform === 'win32') signals.push('SIGBREAK');
for (const signal of signals) process.on(signal, onSignal);

/**
 * bin/payouts.js listens first, while this bundle loads: its listener goes (after ours came,
 * so the signals are never left to their default), and the stops it heard are counted now.
 */
function takeOverEarlyStops(): void {
  const early = (globalThis as Record<symbol, unknown>)[Symbol.for('payouts.earlyStops')] as
    | { heard: NodeJS.Signals[]; listener: (signal: NodeJS.Signals) => void }
    | undefined;
  if (!early) return;
  for (const signal of signals) process.off(signal, early.listener);
  for (const signal of early.heard.splice(0)) onSignal(signal);
}

/**
 * A gone parent stops the run only when the parent was a package runner (npx, `npm exec`,
 * `npm run`) or the `sh -c` it runs payouts through: a job runner killed it. Any other parent
 * (a shell, a launcher, a daemonizing fork) may leave on purpose, and the run goes on.
 */
function watchParent(): void {
  const [parent, grandparent] = ancestorsToWatch(process.ppid, process.env);
  if (parent === undefined) return;
  const timer = setInterval(() => {
    const gone =
      process.ppid !== parent || (grandparent !== undefined && parentOf(parent) !== grandparent);
    if (!gone) return;
    clearInterval(timer);
    stop();
  }, PARENT_CHECK_MS);
  timer.unref();
}
if (!detached) watchParent();

const argv = process.argv.slice(2);
const runtime: Runtime = {
  env: process.env,
  // Getters: Node creates a standard stream on first access, and creating stdin (a file
  // stream when it is /dev/null) loads fs/promises and readline; --help needs neither.
  get stdin() {
    return process.stdin;
  },
  get stdout() {
    return process.stdout;
  },
  get stderr() {
    return process.stderr;
  },
  cwd: process.cwd(),
  pid: process.pid,
  version,
  interrupt: interrupt.signal,
  finishNow: finishNow.signal,
};

takeOverEarlyStops();

/** Exits once stdout has drained, so a large --json document is never cut short. */
function exitAfterStdout(code: number): void {
  process.stdout.write('', () => exitWith(code));
}

let settled = false;
let reportingUnfinished = false;
// The loop emptied while main is still pending: nothing can settle it any more, and Node
// would exit 0 as if the run had succeeded.
process.on('beforeExit', () => {
  if (settled || reportingUnfinished) return;
  reportingUnfinished = true;
  void reportUnfinished(argv, runtime).then(exitAfterStdout);
});

// main starts from a promise job, not from this module's body: when stdout's reader has gone
// (`payouts --help | head -1`), the EPIPE error is then emitted after the exit below, which
// keeps the exit code 0 rather than a crash.
void Promise.resolve()
  .then(() => main(argv, runtime))
  .then((code) => {
    settled = true;
    exitAfterStdout(code);
  });
