import { PayoutsError } from '../../errors.js';

/** A journal that cannot be read safely: which payouts were sent is not known, so nothing is sent. */
export class JournalCorruptError extends PayoutsError {
  override name = 'JournalCorruptError';
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    detail: string,
  ) {
    super(
      `${file}${line === undefined ? '' : ` line ${line}`}: ${detail}; the run journal is damaged, so payouts does not know what this run sent. Check the file, or move it away to start over (payouts already sent may then be sent again)`,
    );
  }
}
