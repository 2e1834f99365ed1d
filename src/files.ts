/**
 * The one way payouts writes a file, so that no one else on the machine can turn it: a new
 * file is created under a name no one can guess, with O_EXCL and O_NOFOLLOW, and checked once
 * open; a file is replaced by renaming such a file over its name, never by writing through
 * what the name holds (a symbolic link, a FIFO, a device, another user's file). Files the tool
 * trusts (its config, its state) must be the user's own: `trustProblem` says why not.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  lstatSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { errorCode, UsageError } from './errors.js';

// Not defined on Windows, where a name is never followed to another file this way.
const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const NONBLOCK = constants.O_NONBLOCK ?? 0;
const NEW_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW;

/** Names tried before giving up, should another file hold each (it never should). */
const NAME_TRIES = 8;

/** A file that is not what payouts may open or replace: `path`, then what is wrong with it. */
export class UnsafeFileError extends Error {
  override name = 'UnsafeFileError';
  readonly code = 'EUNSAFE';
  constructor(
    readonly path: string,
    /** "is a symbolic link", "belongs to bob (uid 1001), not to you", … */
    readonly problem: string,
  ) {
    super(`${path} ${problem}`);
  }
}

/** What kind of file a status describes, in words, for a refusal. */
export function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isFIFO()) return 'a named pipe (FIFO)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return st.isFile() ? 'a file' : 'a special file';
}

/** The user this process runs as; undefined where there are no such ids (Windows). */
export function currentUid(): number | undefined {
  return typeof process.getuid === 'function' ? process.getuid() : undefined;
}

/** A user's name from /etc/passwd, else `uid N`. */
export function userName(uid: number): string {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const [name, , id] = line.split(':');
      if (name && Number(id) === uid && id !== '') return `${name} (uid ${uid})`;
    }
  } catch {
    // No passwd file (a container may have none): the number says it.
  }
  return `uid ${uid}`;
}

/**
 * Why a file or folder cannot be trusted by user `uid`: owned by someone else (root's are
 * trusted by everyone, since root could change anything anyway), or writable by others; a
 * symbolic link is judged by the link itself. Undefined when it can be, or on Windows.
 */
export function trustProblem(st: Stats, uid = currentUid()): string | undefined {
  if (uid === undefined) return undefined;
  if (st.uid !== uid && st.uid !== 0) return `belongs to ${userName(st.uid)}, not to you`;
  if (!st.isSymbolicLink() && (st.mode & 0o022) !== 0) {
    const mode = (st.mode & 0o777).toString(8).padStart(4, '0');
    return `can be changed by other users (mode ${mode})`;
  }
  return undefined;
}

/** Where the random part of a new name comes from (a test may draw the names itself). */
export const nameSource = { bytes: (n: number): Buffer => randomBytes(n) };

/** A name beside `path` no one can guess: `.NAME.RANDOM.tmp` (the name shortened to fit). */
export function hiddenTempName(path: string): string {
  const name = basename(path).slice(0, 120);
  return join(dirname(path), `.${name}.${nameSource.bytes(9).toString('hex')}.tmp`);
}

/**
 * Creates a new file at `path` (never one that exists: O_EXCL, and O_NOFOLLOW) and returns its
 * descriptor, checked once open to be a regular file with one name.
 */
export function createNewFile(path: string, mode = 0o600): number {
  const fd = openSync(path, NEW_FILE, mode);
  const st = fstatSync(fd);
  if (!st.isFile() || st.nlink !== 1) {
    closeSync(fd);
    throw new UnsafeFileError(path, 'is not a new file of its own');
  }
  return fd;
}

/**
 * Opens a file the tool keeps or trusts, never through a symbolic link and never blocking on a
 * FIFO (O_NONBLOCK, then checked: a regular file trusted by this user, see trustProblem).
 */
function openTrusted(path: string, flags: number, mode?: number): number {
  let fd: number;
  try {
    fd = openSync(path, flags | NOFOLLOW | NONBLOCK, mode);
  } catch (err) {
    if (errorCode(err) === 'ELOOP') throw new UnsafeFileError(path, 'is a symbolic link');
    throw err;
  }
  const st = fstatSync(fd);
  const problem = st.isFile() ? trustProblem(st) : `is ${kindOf(st)}, not a file`;
  if (problem) {
    closeSync(fd);
    throw new UnsafeFileError(path, problem);
  }
  return fd;
}

/**
 * Opens (creating when missing) a file the tool keeps, such as state.db, for reading and
 * writing, as openTrusted checks it. Returns its descriptor.
 */
export function openKeptFile(path: string, mode = 0o600): number {
  return openTrusted(path, constants.O_RDWR | constants.O_CREAT, mode);
}

/**
 * The text of a file the tool trusts (its config), checked as openTrusted checks it; undefined
 * when there is none. Throws UnsafeFileError for a link, a special file, or one not trusted.
 */
export function readTrustedFile(path: string): string | undefined {
  let fd: number;
  try {
    fd = openTrusted(path, constants.O_RDONLY);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return undefined;
    throw err;
  }
  try {
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** Creates a new file beside `path` under a name no one can guess; returns its name and descriptor. */
function newTempBeside(path: string, mode: number): { temp: string; fd: number } {
  for (let i = 1; ; i++) {
    const temp = hiddenTempName(path);
    try {
      return { temp, fd: createNewFile(temp, mode) };
    } catch (err) {
      // Something holds that name (it cannot be ours): leave it alone and take another.
      if ((errorCode(err) !== 'EEXIST' && !(err instanceof UnsafeFileError)) || i >= NAME_TRIES)
        throw err;
    }
  }
}

/**
 * What is at `path` (the link itself, unless `follow`), or undefined when nothing is there;
 * any other failure is thrown.
 */
export function statusOf(path: string, follow = false): Stats | undefined {
  try {
    return follow ? statSync(path) : lstatSync(path);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/** Refuses to replace what is not a regular file: a folder, a link, a FIFO, a device. */
function checkReplaceable(path: string): void {
  const st = statusOf(path);
  if (st && !st.isFile()) throw new UnsafeFileError(path, `is ${kindOf(st)} now, left as it is`);
}

/**
 * Writes a file whole or not at all: `write` appends its text to a new file beside `path`
 * (a name no one can guess, O_EXCL, mode `mode`), which is synced and renamed over `path`.
 * Whatever fails, nothing is left behind, and what `path` held (or pointed to) is untouched.
 */
export function replaceFile(
  path: string,
  write: (append: (text: string) => void) => void,
  mode = 0o600,
): void {
  const { temp, fd } = newTempBeside(path, mode);
  let open = true;
  try {
    let buffer = '';
    write((text) => {
      buffer += text;
      if (buffer.length > 1 << 16) {
        writeSync(fd, buffer);
        buffer = '';
      }
    });
    writeSync(fd, buffer);
    fsyncSync(fd);
    closeSync(fd);
    open = false;
    checkReplaceable(path);
    renameSync(temp, path);
  } catch (err) {
    if (open) closeSync(fd);
    rmSync(temp, { force: true });
    throw err;
  }
}

/** A file an option names for payouts to write, as the user gave it and resolved. */
export interface WriteTarget {
  /** The option, for the message: "--report". */
  option: string;
  /** As given. */
  path: string;
  /** Where a relative path is resolved. */
  cwd: string;
}

/** What a written file must never be: a file of the tool's own folders, or an input of the run. */
export interface KeptFiles {
  /** The tool's folders (state, config): nothing in them is written over. */
  folders: string[];
  /** The run's input files, as given (resolved against the target's cwd). */
  inputs?: string[];
}

/** Where a symbolic link leads, for a message: ` (to /real/path)`, or '' when nowhere. */
export function linkTarget(path: string): string {
  try {
    return ` (to ${realpathSync(path)})`;
  } catch {
    return '';
  }
}

/** The real path of a folder, or undefined when it does not exist. */
function realFolder(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/** Whether `path` is `folder` or inside it. */
function inside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep);
}

/** The refusal of a target: the option, the path, what is wrong and the fix (exit 2). */
function refuse(t: WriteTarget, what: string, fix: string): UsageError {
  return new UsageError(`${t.option} ${t.path} ${what}: ${fix}`);
}

/** What an existing file at the target is; undefined when there is none (or a regular file). */
function existingProblem(t: WriteTarget, full: string): UsageError | undefined {
  let st: Stats;
  try {
    st = lstatSync(full);
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ENOENT') return undefined;
    if (code === 'ENAMETOOLONG')
      return refuse(t, 'is a name too long for the file system', 'choose a shorter one');
    if (code === 'ENOTDIR')
      return refuse(t, 'goes through a file as if it were a folder', 'name a file in a folder');
    if (code === 'EACCES')
      return refuse(t, 'is in a folder you cannot open', 'name a file in a folder of yours');
    throw err;
  }
  if (st.isFile()) return undefined;
  if (st.isDirectory())
    return refuse(t, 'is a folder', `name a file in it, such as ${join(t.path, 'report.csv')}`);
  const fix = 'payouts writes only to a file: name a new or regular file instead';
  if (st.isSymbolicLink()) {
    return refuse(
      t,
      `is a symbolic link${linkTarget(full)}, which payouts never writes through`,
      fix,
    );
  }
  return refuse(t, `is ${kindOf(st)}, not a file`, fix);
}

/** What stops a new file being made in the target's folder, found by making one there (and removing it). */
function folderProblem(t: WriteTarget, full: string): UsageError | undefined {
  const folder = dirname(full);
  try {
    const { temp, fd } = newTempBeside(full, 0o600);
    closeSync(fd);
    rmSync(temp, { force: true });
    return undefined;
  } catch (err) {
    const code = errorCode(err);
    const other = 'name a file in a folder you can write to';
    if (code === 'ENOENT')
      return refuse(
        t,
        `is in a folder that does not exist (${folder})`,
        'create the folder first, or name a file in another one',
      );
    if (code === 'EACCES' || code === 'EPERM')
      return refuse(t, `is in a folder you cannot write to (${folder})`, other);
    if (code === 'EROFS') return refuse(t, `is on a read-only file system (${folder})`, other);
    if (code === 'ENOSPC')
      return refuse(
        t,
        `is on a full disk (${folder})`,
        'free some space, or name a file on another disk',
      );
    if (code === 'ENAMETOOLONG')
      return refuse(t, 'is a name too long for the file system', 'choose a shorter one');
    throw err;
  }
}

/** Whether the target is one of the run's input files (the same file, by any name). */
function isInput(t: WriteTarget, full: string, inputs: string[]): boolean {
  let st: Stats;
  try {
    st = lstatSync(full);
  } catch {
    return false;
  }
  return inputs.some((input) => {
    try {
      const i = lstatSync(resolve(t.cwd, input));
      return i.ino === st.ino && i.dev === st.dev;
    } catch {
      return false;
    }
  });
}

/**
 * Why payouts must not write the file a target names, checked before anything is sent: what
 * is there now (a folder, a link, a FIFO, a device), a file the tool keeps or an input of the
 * run, a folder that is missing or cannot be written, a name too long. Undefined when it may.
 * The error's message names the option, the path and the fix.
 */
export function writeTargetProblem(t: WriteTarget, kept: KeptFiles): UsageError | undefined {
  const full = resolve(t.cwd, t.path);
  const existing = existingProblem(t, full);
  if (existing) return existing;
  const realDir = realFolder(dirname(full));
  const own = realDir && kept.folders.map(realFolder).find((f) => f && inside(realDir, f));
  if (own)
    return refuse(
      t,
      `is in payouts' own folder ${own}, where it keeps its history and settings`,
      'name a file elsewhere, such as report.csv in the current folder',
    );
  if (isInput(t, full, kept.inputs ?? []))
    return refuse(t, 'is an input file of this run', 'name another file for it to write');
  return folderProblem(t, full);
}

/**
 * Throws the first reason (a UsageError, exit 2) payouts must not write one of `targets`, two
 * options naming the same file included; targets without a path are not asked for.
 */
export function checkWriteTargets(
  targets: Array<Omit<WriteTarget, 'path'> & { path?: string }>,
  kept: KeptFiles,
): void {
  const seen = new Map<string, string>();
  for (const t of targets) {
    if (t.path === undefined) continue;
    const target = { ...t, path: t.path };
    const full = resolve(t.cwd, t.path);
    const other = seen.get(full);
    if (other)
      throw refuse(target, `is the file ${other} names too`, 'give each option a file of its own');
    seen.set(full, t.option);
    const problem = writeTargetProblem(target, kept);
    if (problem) throw problem;
  }
}
