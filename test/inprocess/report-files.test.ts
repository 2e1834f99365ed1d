import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chownSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJsonStdout } from '../helpers/cli.js';
import { failsThese, ledgerPerTest } from '../helpers/ledger-service.js';
import { runsOnFakeClock } from '../helpers/main.js';
import { writeRun } from '../helpers/sandbox.js';

// Issue 52, item 1: every file payouts writes is checked before anything is sent, written
// under a name no one can guess and renamed into place; what another user plants at any name
// it writes is never written through, and never freezes the run.

const ledger = ledgerPerTest();
const run = runsOnFakeClock();

/** sha256 of a file, to see it untouched. */
const digest = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

interface Doc {
  exit_code: number;
  success_count: number;
  error: { message: string } | null;
}

/** Writes `n` payouts whose references start with `prefix`; returns the file. */
function payoutsFile(dir: string, prefix: string, n: number): string {
  const file = join(dir, `${prefix}.csv`);
  const rows = Array.from({ length: n }, (_, i) => `${prefix}-${i + 1},1.25,EUR,p${i}@example.com`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return file;
}

/** A home with a history (state.db) and a config file, and a service to send to. */
async function setUp() {
  // What the service does as each create request arrives, before answering it.
  const hooks = { onCreate: () => {} };
  const svc = await ledger.start(() => {
    hooks.onCreate();
    return {};
  });
  const home = ledger.home();
  const env = svc.env(home.env);
  const { file } = writeRun(home.dir, 3);
  const first = await run(['send', file, '--yes'], { env });
  expect(first.code).toBe(0);
  const config = join(home.dir, 'config', 'payouts');
  mkdirSync(config, { recursive: true, mode: 0o700 });
  writeFileSync(join(config, 'config.json'), '{"profiles":{}}\n', { mode: 0o600 });
  const stateDb = join(home.dir, 'state', 'payouts', 'state.db');
  const victim = join(home.dir, 'victim.txt');
  writeFileSync(victim, 'the operator keeps this\n', { mode: 0o600 });
  const again = payoutsFile(home.dir, 'AGAIN', 2);
  return { svc, hooks, home, env, file: again, config, stateDb, victim };
}

describe('report targets are checked before anything is sent', () => {
  it('refuses state.db, the config, a folder, a link, a FIFO, a device and an input: exit 2, no request', async () => {
    const t = await setUp();
    const dir = t.home.dir;
    mkdirSync(join(dir, 'out'));
    symlinkSync(t.victim, join(dir, 'link.csv'));
    execFileSync('mkfifo', [join(dir, 'fifo.csv')]);
    const before = { db: digest(t.stateDb), creates: t.svc.creates, gets: t.svc.gets };
    const cases: Array<[string, string, RegExp]> = [
      ['--report', t.stateDb, /is in payouts' own folder .*payouts, where it keeps its history/],
      ['--report', join(t.config, 'config.json'), /is in payouts' own folder .*config\/payouts/],
      ['--failed-out', join(t.config, 'config.json'), /is in payouts' own folder/],
      ['--report', join(dir, 'out'), /is a folder: name a file in it, such as .*out\/report\.csv/],
      ['--report', join(dir, 'link.csv'), /is a symbolic link \(to .*victim\.txt\)/],
      ['--failed-out', join(dir, 'fifo.csv'), /is a named pipe \(FIFO\), not a file/],
      ['--report', '/dev/null', /is a character device, not a file/],
      ['--report', t.file, /is an input file of this run: name another file/],
      ['--report', join(dir, 'nope', 'r.csv'), /is in a folder that does not exist/],
    ];
    for (const [option, path, said] of cases) {
      const r = await run(['send', t.file, '--yes', '--json', option, path], { env: t.env });
      expect(r.code, `${option} ${path}`).toBe(2);
      const doc = parseJsonStdout<Doc>(r);
      expect(doc.error?.message).toMatch(said);
      expect(doc.error?.message.startsWith(`${option} ${path} `)).toBe(true);
    }
    const same = join(dir, 'same.csv');
    const r = await run(['send', t.file, '--yes', '--report', same, '--failed-out', same], {
      env: t.env,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--failed-out ${same} is the file --report names too`);
    expect({ db: digest(t.stateDb), creates: t.svc.creates, gets: t.svc.gets }).toEqual(before);
    expect(readFileSync(t.victim, 'utf8')).toBe('the operator keeps this\n');
    expect(lstatSync(join(dir, 'fifo.csv')).isFIFO()).toBe(true);
    expect(readdirSync(join(dir, 'out'))).toEqual([]);
    const show = await run(['runs', 'show', 'x', '--failed-out', t.stateDb], { env: t.env });
    expect(show.code).toBe(2);
    expect(show.stderr).toMatch(/--failed-out .*state\.db is in payouts' own folder/);
    // reconcile refuses it before any lookup.
    const gets = t.svc.gets;
    const reconciled = await run(['reconcile', '--all', '--failed-out', t.stateDb], { env: t.env });
    expect(reconciled.code).toBe(2);
    expect(reconciled.stderr).toMatch(/--failed-out .*state\.db is in payouts' own folder/);
    expect(t.svc.gets).toBe(gets);
    expect(digest(t.stateDb)).toBe(before.db);
  });
});

describe("another user's file planted at the name", () => {
  it.skipIf(process.getuid?.() !== 0)(
    "is replaced by a new file of the operator's, 0600: theirs is never written to",
    async () => {
      const t = await setUp();
      const share = join(t.home.dir, 'share');
      mkdirSync(share, { mode: 0o777 });
      const target = join(share, 'failed.csv');
      writeFileSync(target, 'theirs\n', { mode: 0o666 });
      chownSync(target, 65534, 65534);
      // A second name for their file shows what became of it.
      linkSync(target, join(share, 'kept-by-them'));
      const r = await run(['send', t.file, '--yes', '--failed-out', target], { env: t.env });
      expect(r.code).toBe(0);
      expect(readFileSync(join(share, 'kept-by-them'), 'utf8')).toBe('theirs\n');
      const st = lstatSync(target);
      expect([st.uid, st.mode & 0o777, st.nlink]).toEqual([0, 0o600, 1]);
      expect(readFileSync(target, 'utf8')).toContain('reference_id,new_reference_id');
    },
  );
});

describe('a file that cannot be written once the run has sent', () => {
  it("keeps the run's results, document and exit code, says which file and why, leaves nothing", async () => {
    const t = await setUp();
    const out = join(t.home.dir, 'out');
    mkdirSync(out);
    const report = join(out, 'report.csv');
    // The folder goes while the payouts are sent: the check before sending found it.
    t.hooks.onCreate = () => rmSync(out, { recursive: true, force: true });
    const r = await run(['send', t.file, '--yes', '--json', '--report', report], { env: t.env });
    expect(r.code).toBe(0);
    const doc = parseJsonStdout<Doc>(r);
    expect(doc).toMatchObject({ exit_code: 0, success_count: 2, error: null });
    expect(r.stderr).toContain(
      `error: --report ${report} could not be written (its folder is gone); nothing was left in its place.`,
    );
    expect(r.stderr).not.toMatch(/internal error/);
  });

  it('a link, a file or a FIFO planted at the name while sending: never written through, not frozen', async () => {
    const t = await setUp();
    const dir = join(t.home.dir, 'share');
    mkdirSync(dir);
    const planted: Array<[string, (path: string) => void]> = [
      ['link', (path) => symlinkSync(t.victim, path)],
      ['fifo', (path) => execFileSync('mkfifo', [path])],
    ];
    for (const [name, plant] of planted) {
      const target = join(dir, `${name}.csv`);
      t.hooks.onCreate = () => plant(target);
      const file = payoutsFile(t.home.dir, name.toUpperCase(), 1);
      const r = await run(['send', file, '--yes', '--failed-out', target], { env: t.env });
      expect(r.code).toBe(0);
      expect(r.stderr).toMatch(/1 payout: 1 succeeded/);
      expect(r.stderr).toContain(
        `error: --failed-out ${target} could not be written (it is a ${name === 'link' ? 'symbolic link' : 'named pipe (FIFO)'} now, left as it is); nothing was left in its place.`,
      );
    }
    expect(readFileSync(t.victim, 'utf8')).toBe('the operator keeps this\n');
    expect(lstatSync(join(dir, 'link.csv')).isSymbolicLink()).toBe(true);
    expect(lstatSync(join(dir, 'fifo.csv')).isFIFO()).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(['fifo.csv', 'link.csv']);
  });
});

describe('a retry file guarded for the spreadsheet it is opened in (issue 52, item 5)', () => {
  it('guards formula cells in --failed-out, and intake reads every value back exactly', async () => {
    const rows = [
      { reference_id: 'F-1', recipient: '+4915112345678', description: '=1+1' },
      { reference_id: 'F-2', recipient: '@handle', description: '-5% off' },
      { reference_id: 'F-3', recipient: 'tis@example.com', description: "'Tis the season" },
      { reference_id: 'F-4', recipient: 'plus@example.com', description: "'=not a formula" },
    ];
    const svc = await ledger.start(failsThese(new Set(rows.map((r) => r.reference_id))));
    const home = ledger.home();
    const env = svc.env(home.env);
    const input = join(home.dir, 'november.json');
    const payouts = rows.map((r) => ({ ...r, amount: '1.25', currency: 'EUR' }));
    writeFileSync(input, JSON.stringify(payouts));
    const failedOut = join(home.dir, 'failed.csv');
    const sent = await run(
      ['send', input, '--yes', '--chunk-size', '1', '--failed-out', failedOut],
      {
        env,
      },
    );
    expect(sent.code).toBe(4);
    const text = readFileSync(failedOut, 'utf8');
    for (const cell of ["'+4915112345678", "'=1+1", "'@handle", "'-5% off", "''Tis the season"]) {
      expect(text).toContain(`,${cell}`);
    }
    expect(text).toContain(",''=not a formula");
    const runId = /Run ([0-9a-f]{16}): payouts runs show/.exec(sent.stderr)?.[1] ?? '';
    const retry = join(home.dir, 'retry.csv');
    const shown = await run(
      ['runs', 'show', runId, '--failed-out', retry, '--new-references', '-R1'],
      { env },
    );
    expect(shown.code).toBe(0);
    expect(readFileSync(retry, 'utf8')).toContain("F-1,F-1-R1,1.25,EUR,'+4915112345678,'=1+1");
    const again = await run(['send', retry, '--yes', '--chunk-size', '1'], { env });
    expect(again.code).toBe(0);
    const bodies = svc.bodies.map(
      (b) => JSON.parse(b) as { payouts: Array<Record<string, string>> },
    );
    const resent = bodies.flatMap((b) => b.payouts).filter((p) => p.reference_id?.endsWith('-R1'));
    expect(resent.map((p) => [p.reference_id, p.recipient, p.description])).toEqual(
      rows.map((r) => [`${r.reference_id}-R1`, r.recipient, r.description]),
    );
  });
});
