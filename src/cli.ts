import type { Runtime } from './context.js';
import { main, reportUnfinished } from './main.js';
import { version } from './version.js';

/** The entry point: builds the runtime from the process, runs, and is the only place that exits. */
const interrupt = new AbortController();
let interrupts = 0;
const onSignal = () => {
  interrupts += 1;
  // A second Ctrl-C means "now": in-flight requests are abandoned, the journal says which.
  if (interrupts > 1) process.exit(130);
  interrupt.abort();
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

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
};

/** Exits once stdout has drained, so a large --json document is never cut short. */
function exitAfterStdout(code: number): void {
  process.stdout.write('', () => process.exit(code));
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
