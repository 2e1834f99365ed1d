import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Whether a program can be run here (zsh and fish are not on every machine). */
export function hasProgram(name: string): boolean {
  return spawnSync(name, ['-c', 'exit 0']).status === 0;
}

const made: string[] = [];

/** A new temporary folder, removed by removeTempDirs. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'payouts-completion-'));
  made.push(dir);
  return dir;
}

/** Removes the folders tempDir made. */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Writes a script into a new temporary folder and returns its path. */
export function writeScript(text: string, name: string): string {
  const path = join(tempDir(), name);
  writeFileSync(path, text);
  return path;
}

/**
 * Sources a bash completion script, sets COMP_WORDS to `words` with the cursor on the last
 * one, calls `fn` as readline would, and returns COMPREPLY sorted.
 */
export function bashComplete(script: string, fn: string, words: string[], cwd: string): string[] {
  const r = spawnSync(
    'bash',
    [
      '--norc',
      '--noprofile',
      '-c',
      `source "$1" || exit 9; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); ${fn}; printf '%s\\n' "\${COMPREPLY[@]}"`,
      'bash',
      script,
      ...words,
    ],
    { cwd, encoding: 'utf8', env: { PATH: process.env.PATH, LC_ALL: 'C' } },
  );
  if (r.status !== 0 || r.stderr !== '') throw new Error(`bash exited ${r.status}: ${r.stderr}`);
  return r.stdout
    .split('\n')
    .filter((l) => l !== '')
    .sort();
}
