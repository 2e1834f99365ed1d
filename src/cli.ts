import { main } from './main.js';
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

const code = await main(process.argv.slice(2), {
  env: process.env,
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  cwd: process.cwd(),
  pid: process.pid,
  version,
  interrupt: interrupt.signal,
});

// Exit once stdout has drained, so a large --json document is never cut short.
process.stdout.write('', () => process.exit(code));
