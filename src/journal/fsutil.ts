import { chmod, mkdir, open } from 'node:fs/promises';
import { journalsDirOf, serviceDirOf } from './ids.js';

/** Mode of journal and lock folders: only the user may list or enter them. */
export const DIR_MODE = 0o700;
/** Mode of journal and lock files: only the user may read them. */
export const FILE_MODE = 0o600;

/** Creates (or tightens) a service's journal folder and returns its path. */
export async function ensureServiceDir(stateDir: string, serviceKey: string): Promise<string> {
  const dir = serviceDirOf(stateDir, serviceKey);
  await mkdir(dir, { recursive: true, mode: DIR_MODE });
  // mkdir leaves existing folders as they are, and the umask may have widened new ones.
  await chmod(journalsDirOf(stateDir), DIR_MODE);
  await chmod(dir, DIR_MODE);
  return dir;
}

/** Makes a folder's entries durable, so a new file survives a power cut; best effort. */
export async function syncDir(dir: string): Promise<void> {
  try {
    const fh = await open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    // Some platforms (Windows) cannot open or sync a folder; the file's own fsync still holds.
  }
}

/** The error code of a Node system error, if any. */
export function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err
    ? String((err as { code: unknown }).code)
    : undefined;
}
