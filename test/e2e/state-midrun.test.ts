import { execFileSync } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { openDatabase, type StateDb } from '../../src/state/index.js';
import { describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { runMain } from '../helpers/main.js';
import { finishesOnceOnRerun, reportStatuses, sendArgs } from '../helpers/signal-runs.js';
import { writeRun } from '../helpers/sandbox.js';
import { documentOn, expectEveryRow } from '../helpers/stopped-runs.js';
import { onTerminal, storeProfile } from '../helpers/terminal.js';

// Issue 31 item 3: state.db failing mid-send is a stop, not a crash. The built binary commits
// in its writer thread, which in-process runs do not use, so these run it as a person does:
// on a pseudo-terminal, spinner on, a stored profile. PAYOUTS_STATE_WAIT shortens the lock wait.

const fixture = ledgerPerTest();

/**
 * A send of `n` payouts on a terminal with a stored profile, whose third request takes
 * state.db's write lock until `release`, or until the file `until` exists (a pseudo-terminal's
 * `touch` step, once the wait shows).
 */
async function lockedAtThirdRequest(n: number, until?: string) {
  const home = fixture.home();
  const file = join(home.env.XDG_STATE_HOME!, 'payouts', 'state.db');
  let holder: StateDb | undefined;
  const svc = await fixture.start((nth) => {
    if (nth === 3) {
      holder = openDatabase(file);
      holder.exec('BEGIN IMMEDIATE');
      if (until !== undefined) {
        // Bounded, so that a run that never shows the wait ends the test instead of hanging it.
        const giveUp = Date.now() + 60_000;
        const poll = setInterval(() => {
          if (!existsSync(until) && Date.now() < giveUp) return;
          clearInterval(poll);
          release();
        }, 10);
      }
    }
    return {};
  });
  await storeProfile(home.env, svc.url);
  const { file: csv, refs } = writeRun(home.dir, n);
  /** Ends the lock and the connection; again later, nothing. */
  function release() {
    if (holder?.open && holder.inTransaction) holder.exec('ROLLBACK');
    if (holder?.open) holder.close();
  }
  return { s: { svc, home, file: csv, refs, marker: '' }, file, release };
}

describe('state.db locked by another program mid-send', () => {
  it('stops: no new request, every row reported, exit 7; the next run finishes once', async () => {
    // The lock is held until the run has ended.
    const { s, file, release } = await lockedAtThirdRequest(20);
    const { svc, home, refs } = s;
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
      release();
    }
    await finishesOnceOnRerun(s, { PAYOUTS_TIMEOUT: '1' });
  });
});

describe('state.db locked by another program for a while mid-send', () => {
  it('counts the wait down on the spinner line, then goes on: every payout applied once', async () => {
    // Held until the countdown shows: 2 s waited in silence, then told and counted down.
    const shown = join(fixture.home().dir, 'countdown-shown');
    const { s, file, release } = await lockedAtThirdRequest(10, shown);
    const { svc, home, refs } = s;
    const env = { ...home.env, PAYOUTS_STATE_WAIT: '6' };
    try {
      const r = await onTerminal(
        sendArgs(s, '--yes'),
        [{ expect: 'giving up in' }, { touch: shown }],
        env,
      );
      expect(r.steps, r.output).toBe(2);
      expect(r.code, r.output).toBe(0);
      expect(r.output).toContain(`the state database ${file} is locked by another program`);
      expect(r.output).toMatch(/state\.db locked by another program, giving up in [1-4] s/);
      expect(r.output).toMatch(/10 payouts: 10 succeeded, 0 failed/);
      expect(svc.held.size).toBe(refs.length);
      expect(svc.appliedTwice()).toEqual([]);
    } finally {
      release();
    }
  });
});

/** A 4 MiB tmpfs at `dir`, and how to unmount it; undefined where mounting is not allowed. */
function smallDisk(dir: string): (() => void) | undefined {
  mkdirSync(dir, { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  return () => execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
}

/** Writes `file` until the disk is full. */
function fillDisk(file: string): void {
  const block = Buffer.alloc(64 * 1024, 1);
  const fd = openSync(file, 'w');
  try {
    for (;;) writeSync(fd, block);
  } catch {
    // ENOSPC: the disk is full.
  } finally {
    closeSync(fd);
  }
}

describe('a disk that fills mid-send, for real', () => {
  // The in-process test (test/inprocess/state-db.test.ts) fills state.db with max_page_count,
  // which runs anywhere; a full tmpfs fails the writer thread's COMMIT, as a real disk does.
  it('every row keeps the status the run knows, exit 7; the next run finishes once', async (ctx) => {
    const home = fixture.home();
    const unmount = smallDisk(home.env.XDG_STATE_HOME!);
    if (!unmount) ctx.skip();
    const filler = join(home.env.XDG_STATE_HOME!, 'filler');
    try {
      const svc = await fixture.start((n) => {
        if (n === 3) fillDisk(filler);
        return {};
      });
      await storeProfile(home.env, svc.url);
      const { file: csv, refs } = writeRun(home.dir, 20);
      const s = { svc, home, file: csv, refs, marker: '' };
      const r = await onTerminal(sendArgs(s, '--yes', '--json'), [], home.env);
      const doc = documentOn(r.output);
      expect(r.code, r.output).toBe(7);
      expect(doc.error).toMatchObject({ type: 'StateError', exit_code: 7 });
      expect(doc.error!.message).toContain('the disk is full');
      expectEveryRow(doc, refs);
      expect(doc.success_count).toBe(svc.held.size);
      rmSync(filler);
      await finishesOnceOnRerun(s, { PAYOUTS_TIMEOUT: '1' });
    } finally {
      unmount?.();
    }
  });
});

describe('a finished run and its -wal', () => {
  it('state.db alone holds the run, even while another program has it open', async () => {
    const home = fixture.home();
    const svc = await fixture.start();
    await storeProfile(home.env, svc.url);
    const dir = join(home.env.XDG_STATE_HOME!, 'payouts');
    // A first run makes state.db, in this process: what is tested is the binary's run after it.
    const warm = writeRun(home.dir, 2, 'warm.csv');
    expect((await runMain(['send', warm.file, '--yes'], { env: home.env })).code).toBe(0);
    // Another program reading state.db keeps SQLite from folding the -wal in at close.
    const reader = openDatabase(join(dir, 'state.db'), { readonly: true });
    reader.prepare('SELECT count(*) FROM runs').get();
    try {
      const { file: csv, refs } = writeRun(home.dir, 30, 'more.csv');
      expect((await onTerminal(['send', csv, '--yes'], [], home.env)).code).toBe(0);
      const creates = svc.creates;
      // The folder as a -wal deleted after the run leaves it: state.db alone, elsewhere.
      const other = fixture.home();
      mkdirSync(join(other.env.XDG_STATE_HOME!, 'payouts'), { recursive: true });
      copyFileSync(join(dir, 'state.db'), join(other.env.XDG_STATE_HOME!, 'payouts', 'state.db'));
      await storeProfile(other.env, svc.url);
      // What the copy holds is read in this process: the binary's part ended with its runs.
      const again = await runMain(['send', csv, '--yes'], { env: other.env });
      expect(again.stderr).toContain('Nothing to send: all 30 payouts were sent earlier');
      expect(again.code).toBe(0);
      expect(svc.creates).toBe(creates);
      expect(svc.held.size).toBe(refs.length);
      expect(svc.appliedTwice()).toEqual([]);
    } finally {
      reader.close();
    }
  });
});
