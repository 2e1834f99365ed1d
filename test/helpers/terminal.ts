import { execFile, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { BIN } from './cli.js';
import { runMain } from './main.js';

const DRIVER = fileURLToPath(new URL('./pty-driver.py', import.meta.url));

let python: string | undefined;
/**
 * The interpreter `python3` on PATH stands for, found once per worker: a version manager's
 * shim (pyenv) starts a chain of shell scripts on every call.
 */
export function python3(): string {
  python ??= execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], {
    encoding: 'utf8',
  }).trim();
  return python;
}

/** One step of a pseudo-terminal script (see pty-driver.py). */
export type Step =
  | { expect: string }
  | { send: string }
  | { wait_file: string }
  | { sleep: number }
  | { touch: string }
  | { signal: 'TERM' | 'HUP' | 'INT' }
  | { hangup: true };

/** What a pseudo-terminal showed, and how its command ended. */
export interface Screen {
  /** What the terminal showed, colours and cursor movements removed. */
  output: string;
  code: number;
  steps: number;
}

/**
 * Runs `payouts ARGS` on a pseudo-terminal (100 columns unless `cols` says otherwise; 0 is a
 * terminal that reports no size), started through `wrapper` when given (`nohup`, say),
 * playing `script` as a person would. The environment is
 * only PATH, LANG, TERM and `env`: no CI, so the spinner is on unless `env` turns it off.
 */
export function onTerminal(
  args: string[],
  script: Step[],
  env: Record<string, string>,
  how: number | { cols?: number; wrapper?: string[] } = 100,
): Promise<Screen> {
  const { cols = 100, wrapper = [] } = typeof how === 'number' ? { cols: how } : how;
  const command = [DRIVER, JSON.stringify(script), '--cols', String(cols)];
  command.push('--', ...wrapper, process.execPath, BIN, ...args);
  const fullEnv = { PATH: process.env.PATH ?? '', LANG: 'C.UTF-8', TERM: 'xterm', ...env };
  return new Promise((resolve, reject) => {
    execFile(
      python3(),
      command,
      { env: fullEnv, timeout: 90_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`${err.message}\n${stderr}`));
        else {
          const screen = JSON.parse(stdout) as Screen;
          resolve({ ...screen, output: withoutEscapes(screen.output).replace(/\r\n/g, '\n') });
        }
      },
    );
  });
}

/** Text without terminal escape sequences (colours, cursor movements, line clearing). */
function withoutEscapes(text: string): string {
  return text.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '');
}

/**
 * Stores a profile as a person does, with `payouts config set-credentials` (the secret on
 * standard input), so runs read their credentials through the config file. It runs in this
 * process, through the same main(), to spare a process start per test: test/e2e/keyring.test.ts
 * runs that command as a process.
 */
export async function storeProfile(home: Record<string, string>, baseUrl: string): Promise<void> {
  const r = await runMain(
    [
      'config',
      'set-credentials',
      '--base-url',
      baseUrl,
      '--client-id',
      'client-1',
      '--client-secret-stdin',
      '--no-keyring',
    ],
    { env: home, stdin: 'secret-1' },
  );
  if (r.code !== 0) throw new Error(`config set-credentials failed: ${r.stderr}`);
}
