import { open } from 'node:fs/promises';
import { JournalCorruptError } from './errors.js';
import { isNewerVersionHeader, type JournalRecord, parseRecord } from './records.js';

/** What reading a journal found, besides its records. */
export interface ReadResult {
  /** Whether the file holds a run header (an empty or torn-at-birth file does not). */
  hasHeader: boolean;
  /** Length of the file up to the end of its last valid line. */
  validBytes: number;
  /** Whether an unparsable final line (a write cut short by a crash) was left out. */
  torn: boolean;
  /** Whether the last valid record lacks its newline (the crash cut exactly before it). */
  missingNewline: boolean;
}

const CHUNK = 64 * 1024;
const NEWLINE = 0x0a;

/** An unparsable line, kept until it is known whether anything follows it. */
interface Suspect {
  line: number;
  start: number;
}

/**
 * Streams a journal's records to `onRecord`, one line at a time, so memory stays flat whatever
 * the journal's size. An unparsable final line is a crash's torn write and is left out; an
 * unparsable line anywhere else is a JournalCorruptError naming the file and line.
 */
export async function readJournalFile(
  path: string,
  onRecord: (record: JournalRecord, line: number) => void,
): Promise<ReadResult> {
  const fh = await open(path, 'r');
  const state = {
    lineNo: 0,
    validBytes: 0,
    hasHeader: false,
    missingNewline: false,
    suspect: undefined as Suspect | undefined,
  };

  /** Handles one line spanning [start, end) of the file. */
  const handleLine = (bytes: Buffer, start: number, end: number, terminated: boolean): void => {
    state.lineNo += 1;
    const text = bytes.toString('utf8');
    if (text.trim() === '') {
      if (!state.suspect) state.validBytes = end;
      return;
    }
    if (state.suspect) {
      throw new JournalCorruptError(path, state.suspect.line, 'not a valid journal record');
    }
    const record = parseRecord(text);
    if (!record) {
      if (state.lineNo === 1 && isNewerVersionHeader(text)) {
        throw new JournalCorruptError(
          path,
          1,
          'written by a newer version of payouts; update payouts to read it',
        );
      }
      state.suspect = { line: state.lineNo, start };
      return;
    }
    checkOrder(path, record, state.lineNo, state.hasHeader);
    if (record.t === 'run') state.hasHeader = true;
    if (!terminated) state.missingNewline = true;
    onRecord(record, state.lineNo);
    state.validBytes = end;
  };

  try {
    const buf = Buffer.allocUnsafe(CHUNK);
    let carry: Buffer[] = [];
    let pos = 0;
    let lineStart = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, CHUNK, pos);
      if (bytesRead === 0) break;
      const chunk = buf.subarray(0, bytesRead);
      let from = 0;
      for (;;) {
        const nl = chunk.indexOf(NEWLINE, from);
        if (nl === -1) {
          // The buffer is reused for the next read: keep a copy of the unfinished line.
          carry.push(Buffer.from(chunk.subarray(from)));
          break;
        }
        const piece = chunk.subarray(from, nl);
        const bytes = carry.length > 0 ? Buffer.concat([...carry, piece]) : piece;
        carry = [];
        handleLine(bytes, lineStart, pos + nl + 1, true);
        lineStart = pos + nl + 1;
        from = nl + 1;
      }
      pos += bytesRead;
    }
    const tail = Buffer.concat(carry);
    if (tail.length > 0) handleLine(tail, lineStart, pos, false);
  } finally {
    await fh.close();
  }
  return {
    hasHeader: state.hasHeader,
    validBytes: state.suspect ? state.suspect.start : state.validBytes,
    torn: state.suspect !== undefined,
    missingNewline: state.missingNewline,
  };
}

/** The run header comes first and only once. */
function checkOrder(path: string, record: JournalRecord, line: number, hasHeader: boolean): void {
  if (record.t === 'run' && hasHeader) {
    throw new JournalCorruptError(path, line, 'a second run header');
  }
  if (record.t !== 'run' && !hasHeader) {
    throw new JournalCorruptError(path, line, 'a record before the run header');
  }
}
