import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { checkStateFolder } from './folder.js';

/** A temporary file's run, by the pid in its name: `approved-PREP-PID.csv`, `stdin-PID-RANDOM.spool`. */
const OWNER = /^(?:approved-[0-9a-z]+-(\d+)\.csv|stdin-(\d+)-[0-9a-f]+\.spool)$/;

/** Whether a process runs (one of another user's, which cannot be signalled, counts). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Makes `dir`, the state folder's private folder of a run's temporary files (an approved
 * run's payouts, standard input), and returns it. A run removes its own when it ends; one
 * killed first (SIGKILL, a crash) cannot, so the files of runs no longer running are removed
 * here, before the next run writes one.
 */
export function privateTmp(dir: string): string {
  checkStateFolder(dirname(dir));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const name of readdirSync(dir)) {
    const owner = OWNER.exec(name);
    const pid = Number(owner?.[1] ?? owner?.[2]);
    if (pid > 0 && !running(pid)) rmSync(join(dir, name), { force: true });
  }
  return dir;
}
