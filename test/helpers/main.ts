import { PassThrough, Readable } from 'node:stream';
import { beforeEach } from 'vitest';
import type { Clock } from '../../src/clock.js';
import type { SecretStoreFactory } from '../../src/config/keyring.js';
import type { Runtime } from '../../src/context.js';
import { main } from '../../src/main.js';
import { checkJsonDocument } from './json-schema.js';

/** What one in-process run of the CLI printed and returned. */
export interface MainResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options of one in-process run. */
export interface MainOptions {
  env?: Record<string, string | undefined>;
  stdin?: string;
  clock?: Clock;
  /** Aborts like a first Ctrl-C. */
  interrupt?: AbortSignal;
  /** Stands in for the system keyring. */
  secretStore?: SecretStoreFactory;
  /** Runs as at a terminal this many columns wide: `stdin` is what is typed. */
  terminal?: { columns: number };
  /** Standard input as a stream the test writes to as it goes (instead of `stdin`). */
  input?: Readable;
  /** The folder the run is started in (default: this process's). */
  cwd?: string;
  /** Called with all of stderr so far at each write: a test that waits for a line to show. */
  onStderr?: (text: string) => void;
}

/** A stream that collects what is written to it, as a pipe or a terminal of `columns`. */
function collector(columns?: number): { stream: PassThrough; text(): string } {
  const stream = new PassThrough();
  // A terminal's cursor moves (as tty.WriteStream has them), for a spinner drawn on it.
  const move = (text: string, done?: () => void) => stream.write(text, done);
  if (columns !== undefined)
    Object.assign(stream, {
      isTTY: true,
      columns,
      cursorTo: (x: number, _y?: unknown, done?: () => void) => move(`\x1b[${x + 1}G`, done),
      moveCursor: (dx: number, dy: number, done?: () => void) =>
        move(
          `${dy < 0 ? `\x1b[${-dy}A` : dy > 0 ? `\x1b[${dy}B` : ''}${dx ? `\x1b[${dx}C` : ''}`,
          done,
        ),
      clearLine: (_dir: number, done?: () => void) => move('\x1b[2K', done),
      clearScreenDown: (done?: () => void) => move('\x1b[0J', done),
    });
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

/** Runs `payouts ARGV` in this process through main(), as the entry point would. */
export async function runMain(argv: string[], opts: MainOptions = {}): Promise<MainResult> {
  const columns = opts.terminal?.columns;
  const out = collector(columns);
  const err = collector(columns);
  if (opts.onStderr) err.stream.on('data', () => opts.onStderr!(err.text()));
  const stdin = opts.input ?? Readable.from([opts.stdin ?? '']);
  if (columns !== undefined) Object.assign(stdin, { isTTY: true, setRawMode: () => stdin });
  const env: Record<string, string> = { LANG: 'C.UTF-8' };
  for (const [k, v] of Object.entries(opts.env ?? {})) if (v !== undefined) env[k] = v;
  const runtime: Runtime = {
    env,
    stdin,
    stdout: out.stream,
    stderr: err.stream,
    cwd: opts.cwd ?? process.cwd(),
    pid: process.pid,
    version: '0.0.0-test',
    interrupt: opts.interrupt ?? new AbortController().signal,
    clock: opts.clock,
    secretStore: opts.secretStore,
  };
  const code = await main(argv, runtime);
  await new Promise((r) => setImmediate(r));
  const result = { code, stdout: out.text(), stderr: err.text() };
  // Every --json document the tests produce is checked against docs/schema/.
  checkJsonDocument(argv, result);
  return result;
}

/**
 * A clock whose waits take no real time: sleeping moves its time forward. Real timers and
 * sockets keep their own time, so tests use it for the CLI's own waits only.
 */
export class FakeClock implements Clock {
  constructor(public t = Date.parse('2026-11-24T12:00:00Z')) {}
  /** Every wait asked for, in milliseconds. */
  readonly waits: number[] = [];
  now = (): number => this.t;
  sleep = async (ms: number, signal?: AbortSignal): Promise<void> => {
    this.waits.push(ms);
    await new Promise((r) => setImmediate(r));
    if (signal?.aborted) throw signal.reason ?? new Error('aborted');
    this.t += Math.max(0, ms);
  };
}

/**
 * A FakeClock whose waits also take a little real time (at most 20 ms each): for runs that
 * wait on something happening in real time elsewhere, such as another run giving back a lock,
 * while their own waits (a quiet time, a limit) still pass on the fake clock.
 */
export class PacedClock extends FakeClock {
  constructor() {
    super(Date.now());
    const fake = this.sleep;
    this.sleep = async (ms, signal) => {
      await new Promise((r) => setTimeout(r, Math.min(ms, 20)));
      return fake(ms, signal);
    };
  }
}

/**
 * A `send … --wait` in this process on a PacedClock (unless `opts` gives a clock): `queued`
 * settles once it says it waits (it holds its place in line then), `done` with its result.
 */
export function runQueued(
  argv: string[],
  opts: MainOptions = {},
): { queued: Promise<void>; done: Promise<MainResult> } {
  let inLine!: () => void;
  const queued = new Promise<void>((r) => {
    inLine = r;
  });
  const done = runMain(argv, {
    clock: new PacedClock(),
    ...opts,
    onStderr: (text) => {
      opts.onStderr?.(text);
      if (text.includes('Ctrl-C stops waiting')) inLine();
    },
  });
  return { queued, done };
}

/** A fake clock during which the user presses Ctrl-C (`stop`) as a wait of a second or more begins. */
export function clockStoppedAtLongWait(): { clock: FakeClock; stop: AbortController } {
  const stop = new AbortController();
  const clock = new FakeClock();
  const sleep = clock.sleep;
  clock.sleep = (ms, signal) => {
    if (ms >= 1000) stop.abort();
    return sleep(ms, signal);
  };
  return { clock, stop };
}

/** A runtime over in-memory streams, for calling reportError and friends directly. */
export function memoryRuntime(): { runtime: Runtime; stdout(): string; stderr(): string } {
  const out = collector();
  const err = collector();
  const runtime: Runtime = {
    env: {},
    stdin: new PassThrough(),
    stdout: out.stream,
    stderr: err.stream,
    cwd: '/',
    pid: 1,
    version: '0.0.0-test',
    interrupt: new AbortController().signal,
  };
  return { runtime, stdout: out.text, stderr: err.text };
}

/**
 * For a test file of in-process runs: `payouts ARGS` through main() on a clock of the test's
 * own, new for every test, so retry waits and quiet times take no real time.
 */
export function runsOnFakeClock(): (args: string[], opts?: MainOptions) => Promise<MainResult> {
  let clock = new FakeClock();
  beforeEach(() => {
    clock = new FakeClock();
  });
  return (args, opts = {}) => runMain(args, { clock, ...opts });
}
