import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { finishesOnceOnRerun, reportStatuses, sendArgs } from '../helpers/signal-runs.js';
import { writeRun } from '../helpers/sandbox.js';
import { documentOn, expectEveryRow } from '../helpers/stopped-runs.js';
import { onTerminal, storeProfile } from '../helpers/terminal.js';

// Issue 31 item 3: state.db failing mid-send is a stop, not a crash. The built binary commits
// in its writer thread, which in-process runs do not use, so these run it as a person does:
// on a pseudo-terminal, spinner on, a stored profile. PAYOUTS_STATE_WAIT shortens the lock wait.

const fixture = ledgerPerTest();

describe('state.db locked by another program mid-send', () => {
  it('stops: no new request, every row reported, exit 7; the next run finishes once', async () => {
    const home = fixture.home();
    const file = join(home.env.XDG_STATE_HOME!, 'payouts', 'state.db');
    let holder: Database.Database | undefined;
    // The third request takes state.db's write lock and holds it until the run has ended.
    const svc = await fixture.start((n) => {
      if (n === 3) {
        holder = new Database(file);
        holder.exec('BEGIN IMMEDIATE');
      }
      return {};
    });
    await storeProfile(home.env, svc.url);
    const { file: csv, refs } = writeRun(home.dir, 20);
    const s = { svc, home, file: csv, refs, marker: '' };
    const report = join(home.dir, 'report.csv');
    const env = { ...home.env, PAYOUTS_STATE_WAIT: '1' };
    try {
      const r = await onTerminal(sendArgs(s, '--yes', '--json', '--report', report), [], env);
      const doc = documentOn(r.output);
      expect(r.code, r.output).toBe(7);
      expect(doc.exit_code).toBe(7);
      expect(doc.error).toMatchObject({ type: 'StateError', exit_code: 7 });
      expect(doc.error!.message).toContain(`the state database ${file} stayed locked`);
      expect(r.output).not.toContain('internal error');
      expectEveryRow(doc, refs);
      // The requests whose answers came are success, whether or not state.db took them.
      expect(doc.success_count).toBe(svc.held.size);
      expect(svc.creates).toBeLessThan(10);
      expect([...reportStatuses(report).values()]).toEqual(doc.results.map((x) => x.status));
    } finally {
      holder?.exec('ROLLBACK');
      holder?.close();
    }
    await finishesOnceOnRerun(s, { PAYOUTS_TIMEOUT: '1' });
  });
});
