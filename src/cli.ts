import { closeSync, fstatSync, readFileSync, readlinkSync } from 'node:fs';
import type { Runtime } from './context.js';
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
/** How often the parent is checked: a job runner that kills only `npx` leaves the run orphaned. */
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
 * Whether the run was started under nohup. Node resets an ignored SIGHUP at start-up, so the
 * mark GNU nohup leaves is read instead: standard input (a terminal) reopened as /dev/null,
 * write-only, which nothing else does.
 */
function startedUnderNohup(): boolean {
  try {
    if (readlinkSync('/proc/self/fd/0') !== '/dev/null') return false;
    const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync('/proc/self/fdinfo/0', 'utf8'))?.[1];
    return flags !== undefined && (Number.parseInt(flags, 8) & 3) === 1;
  } catch {
    return false;
  }
}
/** A run under nohup goes on when its terminal closes or its parent goes, as nohup means. */
const ignoresHangUps = startedUnderNohup();

const onSignal = (signal: NodeJS.Signals) => {
  if (signal === 'SIGHUP') {
    if (ignoresHangUps) return;
    hungUp = true;
  }
  stop();
};
// Ctrl-C, a cancelled CI job, a closed terminal and Windows' Ctrl-Break all stop the run the
// same way: no new request, those in flight finish, every row reported, exit 130.
const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
if (process.platform === 'win32') signals.push('SIGBREAK');
for (const signal of signals) process.on(signal, onSignal);

/** The parent of a process from /proc (Linux), or undefined where that cannot be read. */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/**
 * A gone parent is a hang-up: when the process that started the run, or the one that started
 * that (npx runs a command through `sh -c`), goes away, the run stops as on SIGHUP.
 */
function watchParent(): void {
  const parent = process.ppid;
  const grandparent = parentOf(parent);
  const timer = setInterval(() => {
    const gone =
      process.ppid !== parent || (grandparent !== undefined && parentOf(parent) !== grandparent);
    if (!gone) return;
    clearInterval(timer);
    stop();
  }, PARENT_CHECK_MS);
  timer.unref();
}
if (!ignoresHangUps) watchParent();

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
