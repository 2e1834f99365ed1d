import type { Readable, Writable } from 'node:stream';

/** A writable stream that may be a terminal. */
export type OutStream = Writable & { isTTY?: boolean; columns?: number };
/** A readable stream that may be a terminal. */
export type InStream = Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
