import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import { checkJsonDocument } from './json-schema.js';

/** Absolute path of the built CLI's bin script. */
export const BIN = fileURLToPath(new URL('../../bin/payouts.js', import.meta.url));

/** Absolute path of a fixture under test/fixtures. */
export function fixture(...parts: string[]): string {
  return fileURLToPath(new URL(`../fixtures/${parts.join('/')}`, import.meta.url));
}

/** Absolute path of a file under samples/. */
export function sample(name: string): string {
  return fileURLToPath(new URL(`../../samples/${name}`, import.meta.url));
}

/** Writes a CSV of `header` and `count` generated rows (`row(1)` to `row(count)`); returns its path. */
export function writeCsv(
  path: string,
  header: string,
  count: number,
  row: (n: number) => string,
): string {
  const lines = [header];
  for (let n = 1; n <= count; n++) lines.push(row(n));
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

/** The result of one CLI run. */
export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Options of one CLI run. */
export interface RunOptions {
  env?: Record<string, string | undefined>;
  stdin?: string | Buffer;
  cwd?: string;
  timeoutMs?: number;
  /** Another copy of bin/payouts.js to run (default: the built one of this checkout). */
  bin?: string;
  /** Runs it in a session of its own, without the test's terminal (as a job runner does). */
  detached?: boolean;
  /** Called with the process once spawned (to signal it mid-run); returns a clean-up. */
  whileRunning?: (child: ReturnType<typeof spawnCli>) => () => void;
}

/**
 * A private home for a test: config and state folders in a fresh temp dir, so runs never
 * see the developer's own config or journals. Call cleanup() in afterEach/afterAll.
 */
export function tempHome(): { dir: string; env: Record<string, string>; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'payouts-test-'));
  return {
    dir,
    env: {
      HOME: dir,
      XDG_CONFIG_HOME: join(dir, 'config'),
      XDG_STATE_HOME: join(dir, 'state'),
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * For a test file: a maker of private homes (see tempHome), each removed after its test.
 * Call it at the top of the file.
 */
export function tempHomesPerTest(): () => ReturnType<typeof tempHome> {
  const homes: Array<ReturnType<typeof tempHome>> = [];
  afterEach(() => {
    for (const h of homes.splice(0)) h.cleanup();
  });
  return () => {
    const h = tempHome();
    homes.push(h);
    return h;
  };
}

/** Spawns the built CLI with a clean environment (no PAYOUTS_* from the developer). */
export function spawnCli(args: string[], opts: RunOptions = {}) {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', LANG: 'C.UTF-8' };
  for (const [k, v] of Object.entries(opts.env ?? {})) if (v !== undefined) env[k] = v;
  return spawn(process.execPath, [opts.bin ?? BIN, ...args], {
    cwd: opts.cwd,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: opts.detached,
  });
}

/** Runs the built CLI to completion and collects its output. */
export function runCli(args: string[], opts: RunOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(args, opts);
    const stop = opts.whileRunning?.(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 50_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      stop?.();
      const result = { code, signal, stdout, stderr };
      // Every --json document the tests produce is checked against docs/schema/.
      try {
        checkJsonDocument(args, result);
      } catch (error) {
        reject(error);
        return;
      }
      resolve(result);
    });
    child.stdin.on('error', () => {});
    child.stdin.end(opts.stdin ?? '');
  });
}

/** Parses stdout as exactly one JSON document, failing the test when it is anything else. */
export function parseJsonStdout<T = unknown>(r: { stdout: string; stderr: string }): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`stdout is not one JSON document:\n${r.stdout}\n--- stderr ---\n${r.stderr}`);
  }
}
