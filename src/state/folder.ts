/**
 * The state folder is trusted only when no one else can change it: payouts reads which payouts
 * were sent from it, so a history another user could replace, or a link they could plant in it,
 * could make it send a payout twice or write where it should not.
 */
import { readdirSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from '../errors.js';
import { kindOf, linkTarget, statusOf, trustProblem } from '../files.js';

/** The files payouts keeps in the state folder (state.db and SQLite's own beside it). */
const KEPT_FILES = ['state.db', 'state.db-wal', 'state.db-shm', 'state.db-journal'];
/** Its folders, whose entries are files payouts writes and reads back (locks, temporary files). */
const KEPT_FOLDERS = ['locks', 'tmp', 'sandbox'];
/** Folders whose entries are looked at too (the sandbox's are no one's money). */
const LOOKED_INTO = new Set(['locks', 'tmp']);
/** The folders among the locks: a lock's queue of the sends that wait for it (src/lock.ts). */
const LOCK_QUEUE = /\.lock\.queue$/;

/** Why an entry of the state folder is not one payouts may use, or undefined. */
function entryProblem(path: string, st: Stats, folder: boolean): string | undefined {
  if (st.isSymbolicLink()) return `is a symbolic link${linkTarget(path)}`;
  if (folder ? !st.isDirectory() : !st.isFile()) return `is ${kindOf(st)}`;
  return trustProblem(st);
}

/** The refusal of the state folder itself: whose it is or who can change it, and the fix. */
function folderError(dir: string, problem: string): UsageError {
  const fix = problem.startsWith('belongs to')
    ? `move it aside (mv ${dir} ${dir}.not-mine) or set XDG_STATE_HOME to a folder of yours, then run again`
    : `run \`chmod 700 ${dir}\`, check that everything in it is yours (ls -la ${dir}), then run again`;
  return new UsageError(
    `the state folder ${dir} ${problem}: payouts keeps its history only where no one else can change it: ${fix}`,
  );
}

/** The refusal of an entry of the state folder, and the fix. */
function entryError(path: string, problem: string): UsageError {
  return new UsageError(
    `${path}, in payouts' state folder, ${problem}: payouts uses only files of its own there, never through a link: if you did not put it there, someone else may have; move it aside (mv ${path} ${path}.suspect) and, for state.db, restore it from a backup; then run again; nothing was sent`,
  );
}

/**
 * Refuses (exit 2, saying whose it is and how to fix it) a state folder that another user owns
 * or can change, and a file or folder payouts keeps in it (state.db, its -wal and -shm, locks/
 * with its locks' queues, tmp/ and what they hold) that is a link, not what it should be, another user's or open to
 * their changes. Root's own are trusted by everyone; a folder not made yet is fine.
 */
export function checkStateFolder(dir: string): void {
  const st = statusOf(dir, true);
  if (st === undefined) return;
  if (!st.isDirectory()) throw folderError(dir, `is ${kindOf(st)}, not a folder`);
  const problem = trustProblem(st);
  if (problem) throw folderError(dir, problem);
  for (const name of [...KEPT_FILES, ...KEPT_FOLDERS]) {
    const path = join(dir, name);
    const entry = statusOf(path);
    if (entry === undefined) continue;
    const folder = KEPT_FOLDERS.includes(name);
    const wrong = entryProblem(path, entry, folder);
    if (wrong) throw entryError(path, wrong);
    if (folder && LOOKED_INTO.has(name)) checkEntries(path, name === 'locks');
  }
}

/**
 * Refuses an entry of one of payouts' folders that is not a file of this user's: with `queues`
 * (locks/), a lock's queue is a folder, whose waiters' files are looked at in turn.
 */
function checkEntries(dir: string, queues: boolean): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const entry = statusOf(path);
    if (entry === undefined) continue;
    const queue = queues && LOCK_QUEUE.test(name);
    const wrong = entryProblem(path, entry, queue);
    if (wrong) throw entryError(path, wrong);
    if (queue) checkEntries(path, false);
  }
}
