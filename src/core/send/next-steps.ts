import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { statusKind } from '../../domain/statuses.js';
import { STATE_DB } from '../../state/db.js';
import { withoutPassword } from '../../state/pg/url.js';
import type { ResultsSummary } from './render.js';
import type { Finished, RunView } from './finished.js';

/** Pending payouts named one by one in the command that watches them; more need a file. */
const WATCH_INLINE = 5;

/** A word as a POSIX shell reads it back: as is when plain, else in single quotes. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_.,:@%+=/-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** "1 payout is", "2 payouts are". */
function are(n: number): string {
  return n === 1 ? '1 payout is' : `${n} payouts are`;
}

/** The references of payouts not final yet (pending, or a status not documented), up to `max`. */
function openReferences(run: Finished, max: number): string[] {
  const refs: string[] = [];
  for (const o of run.engine.outcomes.values()) {
    const kind = statusKind(o.status);
    if (kind !== 'pending' && kind !== 'undocumented') continue;
    refs.push(o.reference_id);
    if (refs.length > max) break;
  }
  return refs;
}

/** The line that says how to watch the payouts not final yet, with the exact command. */
function watchLine(run: RunView, done: Finished, open: number): string {
  const service = (run.deps.serviceArgs ?? []).map(shellWord).join(' ');
  const tail = `--watch${service ? ` ${service}` : ''}`;
  const refs = openReferences(done, WATCH_INLINE);
  if (refs.length <= WATCH_INLINE) {
    return `${are(open)} not final yet; to watch until they are: payouts status ${refs.map(shellWord).join(' ')} ${tail}`;
  }
  const report = run.opts.reportPath;
  if (report) {
    return `${are(open)} not final yet; to watch until they are: payouts status --from ${shellWord(report)} ${tail}`;
  }
  return `${are(open)} not final yet: run the same command again with --report FILE (what was sent is not sent again), then watch them with: payouts status --from FILE ${tail}`;
}

/**
 * What to do next, for the end of a finished or stopped send: how to watch the payouts not
 * final yet, where the failed ones are (or the flag that writes them), and the run's id.
 */
export function nextSteps(run: RunView, done: Finished, summary: ResultsSummary): string[] {
  const lines: string[] = [];
  const n = summary.counts;
  // Unknown counts outcomes in doubt too, which a later run reads back; those are not watched.
  const open = n.pending + Math.max(0, n.unknown - done.engine.unknown.length);
  if (open) lines.push(watchLine(run, done, open));
  if (n.failed && !run.opts.failedOutPath) {
    lines.push(
      `${n.failed} payout${n.failed === 1 ? '' : 's'} failed or ${n.failed === 1 ? 'was' : 'were'} canceled: a failed payout needs a new reference_id; \`payouts runs show ${done.runId} --failed-out FILE\` writes ${n.failed === 1 ? 'it' : 'them'} to a file to send again`,
    );
  }
  lines.push(`Run ${done.runId}: payouts runs show ${done.runId}`);
  return lines;
}

/**
 * The warning of a --yes run whose history holds no run of the service: with a shared one,
 * the runs sent before it was shared (this folder's state.db among them) are pushed into it.
 */
export function noHistoryWarning(
  history: string,
  service: { settings: { baseUrl: string } },
  deps: { stateUrl?: string; stateDir: string },
): string {
  const head = `${history} holds no run of ${service.settings.baseUrl} yet`;
  const check = 'or pass --check-service to look each payout up at the service first';
  if (deps.stateUrl === undefined) {
    return `${head}: payouts sent from another machine, runner or folder would be sent again. Share one history (PAYOUTS_STATE_URL), ${check}`;
  }
  // The URL without its password, which a command line must not carry (PGPASSWORD, ~/.pgpass).
  const push = `payouts state push --to ${shellWord(withoutPassword(deps.stateUrl))}`;
  const local = join(deps.stateDir, STATE_DB);
  return existsSync(local)
    ? `${head}, but ${local} holds the runs sent from this folder: their payouts would be sent again. Copy them in first with \`${push}\` (its password in PGPASSWORD or ~/.pgpass), ${check}`
    : `${head}: payouts sent before it was shared would be sent again. Copy each machine's runs in with \`${push}\` there (its password in PGPASSWORD or ~/.pgpass), ${check}`;
}
