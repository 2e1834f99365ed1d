/** Input sources: files on disk, and how a failure to read one is explained. */
import { createReadStream } from 'node:fs';
import { errorCode, errorMessage } from '../errors.js';
import type { InputSource } from './types.js';

/** A file on disk as an input source; `displayName` is how messages name it. */
export function fileSource(path: string, displayName?: string): InputSource {
  return {
    name: displayName ?? path,
    open: () => createReadStream(path),
  };
}

const READ_ERRORS: Readonly<Record<string, string>> = {
  ENOENT: 'cannot be read: there is no such file: check the name and the folder',
  EACCES: 'cannot be read: permission denied: check the file permissions',
  EPERM: 'cannot be read: permission denied: check the file permissions',
  EISDIR: 'cannot be read: it is a folder: name a file',
  EMFILE: 'cannot be read: too many files are open: retry with fewer files',
};

/** Explains why a source could not be opened or read. */
export function readErrorMessage(err: unknown): string {
  const code = errorCode(err);
  if (code !== undefined && READ_ERRORS[code] !== undefined) return READ_ERRORS[code];
  const detail = errorMessage(err);
  return `cannot be read (${detail}): check the file`;
}
