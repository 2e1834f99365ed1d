import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from '../../errors.js';
import { count } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import { openStateDb, STATE_DB } from '../../state/index.js';

/** What `payouts state push` needs. */
export interface PushOptions {
  stateDir: string;
  /** The shared history, postgres://… */
  to: string;
  pid: number;
  commandLine: string;
}

/** `payouts state push --to URL`: copies this folder's runs into a shared history. */
export async function pushState(opts: PushOptions, output: Output): Promise<number> {
  if (!existsSync(join(opts.stateDir, STATE_DB))) {
    throw new UsageError(
      `nothing to push: ${join(opts.stateDir, STATE_DB)} does not exist (no payouts were sent from this state folder)`,
    );
  }
  const [{ PgHistory }, { pushHistory }] = await Promise.all([
    import('../../state/pg/history.js'),
    import('../../state/pg/push.js'),
  ]);
  const db = await openStateDb(opts.stateDir);
  try {
    const history = await PgHistory.open(opts.to);
    try {
      const r = await pushHistory(db, history, {
        pid: opts.pid,
        started_at: new Date().toISOString(),
        command: opts.commandLine,
      });
      const payouts = r.copied.reduce((n, c) => n + c.payouts, 0);
      output.result({ to: history.where, copied: r.copied, already_there: r.present }, () =>
        [
          ...r.copied.map(
            (c) => `Copied run ${c.run_id} (${c.service}, ${count(c.payouts, 'payout')})`,
          ),
          `${count(r.copied.length, 'run')} (${count(payouts, 'payout')}) copied to ${history.where}; ${r.present.length} already there`,
          'Next: make it the history of every send here (`payouts config set state_url URL`, or PAYOUTS_STATE_URL),',
          'push from each other machine or CI runner that sent payouts, then `payouts runs` lists what the team sent',
        ].join('\n'),
      );
    } finally {
      await history.close();
    }
  } finally {
    db.close();
  }
  return 0;
}
