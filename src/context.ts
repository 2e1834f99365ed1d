import type { Clock } from './clock.js';
import type { SecretStoreFactory } from './config/keyring.js';
import type { InStream, Output, OutStream } from './output/output.js';
import type { Env } from './paths.js';

/** The process as the entry point sees it; commands and core code get it passed in. */
export interface Runtime {
  env: Env;
  stdin: InStream;
  stdout: OutStream;
  stderr: OutStream;
  cwd: string;
  pid: number;
  version: string;
  /** Aborted on the first SIGINT, SIGTERM or SIGHUP, or when the parent goes: start no new work. */
  interrupt: AbortSignal;
  /**
   * Aborted on a stop more than a second after the first: stop waiting for requests in flight,
   * report them in doubt, and end.
   */
  finishNow?: AbortSignal;
  /** Time for waits between retries and before read-backs; the real clock when absent. */
  clock?: Clock;
  /** Opens the store of Client-Secrets; the system keyring when absent (tests pass a fake). */
  secretStore?: SecretStoreFactory;
}

/** Options every command accepts. */
export interface GlobalOptions {
  profile?: string;
  baseUrl?: string;
  json: boolean;
  /** send --json-lines: the --json output as lines, each result one, then a summary (docs/json.md). */
  jsonLines?: boolean;
  debug: boolean;
  /** --no-color. */
  noColor?: boolean;
}

/** What a command's action gets: the runtime, the global options and the output. */
export interface CommandContext {
  runtime: Runtime;
  globals: GlobalOptions;
  output: Output;
}
