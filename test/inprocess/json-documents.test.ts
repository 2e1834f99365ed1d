import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceKeyOf } from '../../src/core/service.js';
import { COMMAND_EXIT_CODES } from '../../src/exit-codes.js';
import { reportStopped, reportUnfinished } from '../../src/main.js';
import { acquireSendLock } from '../../src/state/index.js';
import { tempHome } from '../helpers/cli.js';
import { startServer } from '../helpers/http-servers.js';
import {
  acceptedByAjv,
  checkWithPython,
  distinctShapes,
  firstOfEachKind,
  MUTATION_KINDS,
  type Mutation,
  mutationsOf,
  pathText,
  pythonJsonschemaMissing,
} from '../helpers/json-mutations.js';
import {
  checkJsonDocument,
  hasSchema,
  leafCommands,
  recordDocuments,
  schemaFileOf,
  schemaFiles,
} from '../helpers/json-schema.js';
import { LedgerService } from '../helpers/ledger-service.js';
import {
  clockStoppedAtLongWait,
  FakeClock,
  type MainResult,
  memoryRuntime,
  runMain,
} from '../helpers/main.js';
import { query, recycledDatabase, teamRoles } from '../helpers/pg.js';
import { RETRY_HEADER } from '../helpers/retry.js';
import { FakeSecretStore } from '../helpers/secret-store.js';

// Issue 41, item 4: every command's --json document has schema_version and a schema in
// docs/schema/, on every exit. runMain checks each document against the schema its
// `command` names (test/helpers/json-schema.ts); this file makes each command print one on
// success, on each exit its --help lists, and stopped. Issue 50: then each shape of document
// printed here gets mechanical mistakes written into it (test/helpers/json-mutations.ts),
// which the schemas must refuse, by ajv and by python-jsonschema.

let svc: LedgerService;
let refusing: LedgerService;
let garbled: LedgerService;
let mixed: LedgerService;
const homes: Array<{ cleanup(): void }> = [];
/** Every document this file's runs print, checked by runMain: the mutation test's material. */
const recorder = recordDocuments();
beforeAll(async () => {
  svc = await LedgerService.start();
  svc.preload({ reference_id: 'HELD-1', amount: 1.25, currency: 'EUR', recipient: 'a@ex.com' });
  garbled = await LedgerService.start();
  garbled.onGet = (_ref, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>');
    return true;
  };
  mixed = await LedgerService.start((_n, posted) => {
    const status = askedStatus(posted[0]?.reference_id ?? '');
    const failed = status === 'failed' ? { message: 'Account closed' } : {};
    return {
      heldAs: status,
      body: (results) => ({
        success: true,
        message: ['Payouts processed'],
        data: {
          success_count: status === 'success' ? results.length : 0,
          failed_count: /^(failed|canceled)$/.test(status) ? results.length : 0,
          results: results.map((x) => ({ ...x, status, ...failed })),
        },
      }),
    };
  });
  // Refuses the credentials on every request.
  const invalid = { success: false, message: ['Invalid API credentials'], data: [] };
  refusing = await LedgerService.start(() => ({ apply: 'none', status: 401, body: invalid }));
  refusing.onGet = (_ref, res) => {
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(JSON.stringify(invalid));
    return true;
  };
});
afterAll(async () => {
  recorder.stop();
  await svc.close();
  await refusing.close();
  await garbled.close();
  await mixed.close();
  for (const h of homes.splice(0)) h.cleanup();
});

/** A fresh home whose runs go to the loopback service, with a payout file in it. */
function home(): { dir: string; env: Record<string, string>; file: string } {
  const h = tempHome();
  homes.push(h);
  const file = join(h.dir, 'run.csv');
  const ref = `R-${Math.random().toString(16).slice(2, 10)}`;
  writeFileSync(file, `reference_id,amount,currency,recipient\n${ref},1.25,EUR,r@ex.com\n`);
  return { dir: h.dir, env: svc.env(h.env), file };
}

/** A short random tag, for references no other test of the service holds. */
const tag = (): string => Math.random().toString(16).slice(2, 10);

/** The status the mixed service answers and holds a payout under: its reference's prefix. */
function askedStatus(ref: string): string {
  return /^(FAILED|CANCELED|PENDING|PROCESSING)-/.exec(ref)?.[1]?.toLowerCase() ?? 'success';
}

/** A fresh home whose runs go to `service`, with a file of these references (1.25 EUR each). */
function homeWith(
  service: LedgerService,
  refs: string[],
): { dir: string; env: Record<string, string>; file: string } {
  const h = home();
  const rows = refs.map((r, i) => `${r},1.25,EUR,r${i}@ex.com,payout ${i + 1}`);
  writeFileSync(h.file, `reference_id,amount,currency,recipient,description\n${rows.join('\n')}\n`);
  return { ...h, env: service.env(h.env) };
}

/** One payout a request, one request at a time: each answered as its reference asks. */
const ONE_BY_ONE = ['--yes', '--chunk-size', '1', '--concurrency', '1'];

/** The results of a send document, as far as these tests read them. */
function resultsOf(r: MainResult): Array<Record<string, unknown>> {
  return (JSON.parse(r.stdout) as { results: Array<Record<string, unknown>> }).results;
}

/** The system keyring, as these runs see it: never the machine's own. */
const keyring = new FakeSecretStore();

/** Runs `payouts ARGV --json` (its document checked by runMain) and returns the result. */
function json(argv: string[], env: Record<string, string>, more: object = {}): Promise<MainResult> {
  const opts = { env, clock: new FakeClock(), secretStore: keyring.factory, ...more };
  return runMain([...argv, '--json'], opts);
}

/** What each exit of this file printed, by command: to check that each command was reached. */
const seen = new Map<string, Set<number>>();
async function expectExit(
  command: string,
  run: Promise<MainResult>,
  code: number,
): Promise<MainResult> {
  const r = await run;
  expect(r.code, `${command}: ${r.stderr}`).toBe(code);
  const doc = JSON.parse(r.stdout) as { schema_version: number; command: string };
  expect(doc.schema_version).toBe(1);
  expect(doc.command).toBe(command);
  if (!seen.has(command)) seen.set(command, new Set());
  seen.get(command)!.add(code);
  return r;
}

const stopped = (): AbortSignal => AbortSignal.abort();

/** A run's result, once its document is checked as runMain checks its own. */
function checked(argv: string[], r: MainResult): MainResult {
  checkJsonDocument(argv, r);
  return r;
}

describe('every command prints one document of its schema', () => {
  it('has a schema for every command of the tree', () => {
    const missing = leafCommands().filter((c) => !hasSchema(c));
    expect(missing.map((c) => `${c}: docs/schema/${schemaFileOf(c)}`)).toEqual([]);
  });

  it('on a usage error, for every command, and for none', async () => {
    const none = await json([], {});
    expect(none.code).toBe(2);
    expect(JSON.parse(none.stdout)).toMatchObject({ command: null, error: { exit_code: 2 } });
    for (const command of leafCommands()) {
      await expectExit(command, json([...command.split(' '), '--no-such-flag'], {}), 2);
    }
  });

  it('send and status: success, not found, stopped', async () => {
    const h = home();
    await expectExit('send', json(['send', h.file, '--yes'], h.env), 0);
    const other = home();
    const stop = { interrupt: stopped() };
    const halted = await expectExit(
      'send',
      json(['send', other.file, '--yes'], other.env, stop),
      130,
    );
    // Stopped before its request: its payout was never sent.
    const { run_id } = JSON.parse(halted.stdout) as { run_id: string | null };
    if (run_id) await expectExit('runs show', json(['runs', 'show', run_id], other.env), 0);
    await expectExit('status', json(['status', 'HELD-1'], h.env), 0);
    await expectExit('status', json(['status', 'NOT-THERE'], h.env), 6);
    await expectExit('status', json(['status', 'HELD-1'], h.env, { interrupt: stopped() }), 130);
  });

  it('runs list and runs show: empty, a run, no such run, a damaged state.db', async () => {
    const h = home();
    const empty = await expectExit('runs list', json(['runs'], h.env), 0);
    expect(JSON.parse(empty.stdout)).toMatchObject({ runs: [], prepared_runs: [] });
    await expectExit('send', json(['send', h.file, '--yes'], h.env), 0);
    const list = await expectExit('runs list', json(['runs', 'list'], h.env), 0);
    const run = (JSON.parse(list.stdout) as { runs: Array<Record<string, unknown>> }).runs[0]!;
    // The public fields only: the journal's own names stay inside.
    expect(Object.keys(run)).not.toContain('kind');
    expect(run.running).toBeNull();
    const shown = await expectExit(
      'runs show',
      json(['runs', 'show', String(run.run_id)], h.env),
      0,
    );
    const payout = (JSON.parse(shown.stdout) as { payouts: Array<Record<string, unknown>> })
      .payouts[0]!;
    // The service's 0.5 in the currency's decimals, as send --json writes it.
    expect(payout).toMatchObject({ state: 'result', status: 'success', charges: '0.50' });
    expect(payout).not.toHaveProperty('req');
    await expectExit('runs show', json(['runs', 'show', 'ffff'], h.env), 2);
    const broken = home();
    mkdirSync(join(broken.dir, 'state', 'payouts'), { recursive: true });
    writeFileSync(join(broken.dir, 'state', 'payouts', 'state.db'), 'not a database');
    await expectExit('runs list', json(['runs'], broken.env), 7);
  });

  it('config: each command, and check accepted, refused, unreachable, stopped', async () => {
    const h = home();
    const creds = ['config', 'set-credentials', '--client-id', 'client-1', '--client-secret-stdin'];
    const stored = [...creds, '--no-keyring', '--base-url', svc.url];
    const env = { HOME: h.env.HOME!, XDG_CONFIG_HOME: h.env.XDG_CONFIG_HOME! };
    await expectExit('config set-credentials', json(creds, env, { stdin: '' }), 3);
    await expectExit('config set-credentials', json(stored, env, { stdin: 'secret-1' }), 0);
    await expectExit('config show', json(['config', 'show'], env), 0);
    await expectExit('config path', json(['config', 'path'], env), 0);
    await expectExit('config set', json(['config', 'set', 'quiet_time', '120'], env), 0);
    await expectExit('config set', json(['config', 'set', 'no_such', '1'], env), 2);
    await expectExit('config check', json(['config', 'check'], env), 0);
    await expectExit('config check', json(['config', 'check'], refusing.env(env)), 3);
    // A page that is not the interface's answer (no answer at all is retried in real time).
    await expectExit('config check', json(['config', 'check'], garbled.env(env)), 7);
    await expectExit('config check', json(['config', 'check'], env, { interrupt: stopped() }), 130);
    await expectExit('config remove', json(['config', 'remove'], env), 0);
    await expectExit('config remove', json(['config', 'remove'], env), 2);
  });

  it('template, completion and sandbox', async () => {
    const h = home();
    await expectExit('template', json(['template'], h.env), 0);
    await expectExit('template', json(['template', '--format', 'xlsx'], h.env), 0);
    await expectExit('completion', json(['completion', 'bash'], h.env), 0);
    await expectExit('completion', json(['completion', 'tcsh'], h.env), 2);
    // The sandbox serves until stopped: stopped at once, it prints its document and exits 0.
    const port = ['sandbox', '--port', '0'];
    await expectExit('sandbox', json(port, h.env, { interrupt: stopped() }), 0);
    await expectExit('sandbox', json(['sandbox', '--port', '70000'], h.env), 2);
  });

  it('state push: nothing to push, unreachable, copied', async () => {
    const h = home();
    await expectExit(
      'state push',
      json(['state', 'push', '--to', 'postgres://u@127.0.0.1:1/x'], h.env),
      2,
    );
    await expectExit('send', json(['send', h.file, '--yes'], h.env), 0);
    await expectExit(
      'state push',
      json(['state', 'push', '--to', 'postgres://u@127.0.0.1:1/x'], h.env),
      7,
    );
    await expectExit(
      'state push',
      json(['state', 'push'], { ...h.env, PAYOUTS_STATE_URL: await recycledDatabase() }),
      0,
    );
    await expectExit('state push', json(['state', 'push'], h.env), 2);
  });

  it('approvals and approve refuse a state folder with their error document', async () => {
    const h = home();
    await expectExit('approvals list', json(['approvals'], h.env), 2);
    await expectExit('approvals show', json(['approvals', 'show'], h.env), 2);
    await expectExit('approve', json(['approve', 'p0123456789abcde'], h.env), 2);
  });

  it('approvals and approve on a shared history: set, prepared, approved, sent, shown, off', async () => {
    const admin = await recycledDatabase();
    const h = home();
    const as = (url: string) => ({ ...h.env, PAYOUTS_STATE_URL: url });
    await expectExit('approvals require', json(['approvals', 'require'], as(admin)), 0);
    const { ana, bob } = await teamRoles(admin);
    await expectExit('send', json(['send', h.file, '--yes'], as(ana)), 9);
    const prepared = await expectExit(
      'send prepare',
      json(['send', h.file, '--prepare'], as(ana)),
      0,
    );
    const prep = (JSON.parse(prepared.stdout) as { prepared_run_id: string }).prepared_run_id;
    await expectExit('approvals list', json(['approvals', 'list'], as(bob)), 0);
    await expectExit('approve', json(['approve', prep, '--yes'], as(bob)), 0);
    await expectExit('approve', json(['approve', prep, '--yes'], as(bob)), 2);
    const unreachable = as('postgres://u@127.0.0.1:1/x');
    await expectExit('approve', json(['approve', prep, '--yes'], unreachable), 7);
    const sent = await expectExit('send', json(['send', h.file, '--yes'], as(ana)), 0);
    const doc = JSON.parse(sent.stdout) as { run_id: string };
    expect(doc).toMatchObject({ approval: { prepared_run_id: prep } });
    const run = await expectExit('runs show', json(['runs', 'show', doc.run_id], as(bob)), 0);
    expect(JSON.parse(run.stdout)).toMatchObject({ approval: { prepared_run_id: prep } });
    const shown = await expectExit('runs show', json(['runs', 'show', prep], as(bob)), 0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ prepared_run_id: prep, state: 'sent' });
    const listed = await expectExit('runs list', json(['runs'], as(bob)), 0);
    expect(JSON.parse(listed.stdout)).toMatchObject({ prepared_runs: [{ state: 'sent' }] });
    await expectExit('approvals off', json(['approvals', 'off'], as(ana)), 2);
    await expectExit('approvals show', json(['approvals', 'show'], as(bob)), 0);
  });

  it('approve and send of a rejected and of an expired prepared run (exit 10, 11)', async () => {
    const admin = await recycledDatabase();
    const h = home();
    const as = (url: string) => ({ ...h.env, PAYOUTS_STATE_URL: url });
    await expectExit('approvals require', json(['approvals', 'require'], as(admin)), 0);
    const { ana, bob } = await teamRoles(admin);
    const prepare = async () => {
      const r = await expectExit('send prepare', json(['send', h.file, '--prepare'], as(ana)), 0);
      return (JSON.parse(r.stdout) as { prepared_run_id: string }).prepared_run_id;
    };
    const rejected = await prepare();
    const no = ['approve', rejected, '--reject', '--reason', 'wrong month', '--yes'];
    await expectExit('approve', json(no, as(bob)), 0);
    await expectExit('approve', json(['approve', rejected, '--yes'], as(bob)), 10);
    await expectExit('send', json(['send', h.file, '--yes'], as(ana)), 10);
    // A rule whose prepared runs expire at once (the client asks for a day at least).
    await query(
      admin,
      `INSERT INTO approval_rules (service_id, service, active, above, expires_days, set_by, at)
       SELECT service_id, service, 1, above, 0, '', '' FROM approval_rules LIMIT 1`,
    );
    const expired = await prepare();
    await expectExit('approve', json(['approve', expired, '--yes'], as(bob)), 11);
    await expectExit('send', json(['send', '--approved', expired, '--yes'], as(ana)), 11);
    await expectExit('approvals off', json(['approvals', 'off'], as(admin)), 0);
  });

  it('send: a dry run, each status, a run sent earlier, refused input and credentials, a service busy or gone', async () => {
    const t = tag();
    const refs = ['OK', 'PENDING', 'PROCESSING', 'FAILED', 'CANCELED'].map((s) => `${s}-${t}`);
    const h = homeWith(mixed, refs);
    const dry = ['send', h.file, '--dry-run', '--batch-reference', 'B-1', '--webhook-url'];
    await expectExit('send', json([...dry, 'https://hooks.example.invalid/x'], h.env), 0);
    const sent = await expectExit('send', json(['send', h.file, ...ONE_BY_ONE], h.env), 4);
    // A status the interface does not document travels apart from the enumerated one.
    expect(resultsOf(sent).map((r) => [r.status, r.service_status])).toEqual([
      ['success', 'success'],
      ['pending', 'pending'],
      ['undocumented', 'processing'],
      ['failed', 'failed'],
      ['canceled', 'canceled'],
    ]);
    const waiting = homeWith(mixed, [`PENDING-${tag()}`]);
    await expectExit('send', json(['send', waiting.file, ...ONE_BY_ONE], waiting.env), 5);
    await expectExit('send', json(['send', waiting.file, '--yes'], waiting.env), 5);
    const bad = home();
    writeFileSync(bad.file, 'reference_id,amount,currency,recipient\nB-1,1,234.00,EUR,x\n');
    await expectExit('send', json(['send', bad.file, '--yes'], bad.env), 2);
    const refused = homeWith(refusing, [`R-${tag()}`]);
    await expectExit('send', json(['send', refused.file, '--yes'], refused.env), 3);
    const closed = await startServer((_req, res) => res.end());
    await closed.close();
    const gone = { ...h.env, PAYOUTS_BASE_URL: closed.url };
    await expectExit('send', json(['send', home().file, '--yes'], gone), 7);
    const busy = home();
    const lock = await acquireSendLock({
      stateDir: join(busy.dir, 'state', 'payouts'),
      serviceKey: serviceKeyOf(svc.url),
      pid: process.pid,
      command: 'payouts send other.csv',
    });
    try {
      await expectExit('send', json(['send', busy.file, '--yes'], busy.env), 8);
    } finally {
      await lock.release();
    }
  });

  it('send --json-lines: its result lines and summary line, sent and refused', async () => {
    const t = tag();
    const h = homeWith(
      mixed,
      ['OK', 'PROCESSING', 'FAILED'].map((s) => `${s}-${t}`),
    );
    const argv = ['send', h.file, ...ONE_BY_ONE, '--json-lines'];
    const sent = await runMain(argv, { env: h.env, clock: new FakeClock() });
    expect(sent.code, sent.stderr).toBe(4);
    expect(sent.stdout.trimEnd().split('\n')).toHaveLength(4);
    const bad = home();
    writeFileSync(bad.file, 'reference_id,amount,currency,recipient\nB-1,1,234.00,EUR,x\n');
    const refused = await runMain(['send', bad.file, '--yes', '--json-lines'], { env: bad.env });
    expect(refused.code).toBe(2);
  });

  it('status: failed with its history and retry, undocumented, refused, unreadable; runs show of a retried payout', async () => {
    const t = tag();
    const h = homeWith(mixed, [`FAILED-${t}`, `PROCESSING-${t}`]);
    const first = await expectExit('send', json(['send', h.file, ...ONE_BY_ONE], h.env), 4);
    const runId = (JSON.parse(first.stdout) as { run_id: string }).run_id;
    await expectExit('status', json(['status', `FAILED-${t}`], h.env), 4);
    const odd = await expectExit('status', json(['status', `PROCESSING-${t}`], h.env), 5);
    expect(JSON.parse(odd.stdout)).toMatchObject({
      results: [
        {
          status: 'undocumented',
          service_status: 'processing',
          record: { status: 'undocumented' },
        },
      ],
    });
    const retry = join(h.dir, 'retry.csv');
    writeFileSync(retry, `${RETRY_HEADER}\nFAILED-${t},NEW-${t},1.25,EUR,r0@ex.com,again\n`);
    await expectExit('send', json(['send', retry, ...ONE_BY_ONE], h.env), 0);
    // Paid by its retry: counted paid (exit 0), its own status kept, the retry beside it.
    const retried = await expectExit('status', json(['status', `FAILED-${t}`], h.env), 0);
    expect(JSON.parse(retried.stdout)).toMatchObject({
      paid_by_retry_count: 1,
      results: [
        {
          status: 'failed',
          retried_as: { reference_id: `NEW-${t}`, status: 'success' },
          paid_by_retry: true,
          history: { reason: 'Account closed', retried: { reference_id: `NEW-${t}` } },
        },
      ],
    });
    await expectExit('runs show', json(['runs', 'show', runId], h.env), 0);
    const out = ['runs', 'show', runId, '--failed-out', join(h.dir, 'failed.csv')];
    await expectExit('runs show', json(out, h.env), 0);
    await expectExit('status', json(['status', 'R-1'], refusing.env(h.env)), 3);
    await expectExit('status', json(['status', 'R-1'], garbled.env(h.env)), 7);
  });

  it('reconcile: paid, failed, pending, refused, unreadable, stopped', async () => {
    const t = tag();
    const h = homeWith(mixed, [`FAILED-${t}`, `PENDING-${t}`, `OK-${t}`]);
    const first = await expectExit('send', json(['send', h.file, ...ONE_BY_ONE], h.env), 4);
    const runId = (JSON.parse(first.stdout) as { run_id: string }).run_id;
    await expectExit('reconcile', json(['reconcile'], h.env), 5);
    const all = await expectExit('reconcile', json(['reconcile', '--run', runId], h.env), 4);
    expect(JSON.parse(all.stdout)).toMatchObject({
      scope: { run_id: runId },
      counts: { paid: 1, failed: 1, pending: 1 },
    });
    const paid = home();
    await expectExit('send', json(['send', paid.file, '--yes'], paid.env), 0);
    await expectExit('reconcile', json(['reconcile', '--all'], paid.env), 0);
    const odd = await LedgerService.start();
    try {
      const o = homeWith(odd, [`X-${t}`]);
      await expectExit('send', json(['send', o.file, '--yes'], o.env), 0);
      await expectExit(
        'reconcile',
        json(['reconcile', '--all'], o.env, { interrupt: stopped() }),
        130,
      );
      odd.onGet = (_ref, res) => {
        const body = { success: false, message: ['Invalid API credentials'], data: [] };
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        return true;
      };
      await expectExit('reconcile', json(['reconcile', '--all'], o.env), 3);
      odd.onGet = (_ref, res) => {
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>');
        return true;
      };
      await expectExit('reconcile', json(['reconcile', '--all'], o.env), 7);
    } finally {
      await odd.close();
    }
  });

  it('send stopped with a request in doubt, and runs show of its payouts in flight', async () => {
    const cut = await LedgerService.start((n) => (n === 2 ? { apply: 'none', cut: true } : {}));
    try {
      const h = homeWith(cut, [`A-${tag()}`, `B-${tag()}`, `C-${tag()}`]);
      const { clock, stop } = clockStoppedAtLongWait();
      const env = { ...h.env, PAYOUTS_TIMEOUT: '2' };
      const more = { clock, interrupt: stop.signal };
      const r = await expectExit('send', json(['send', h.file, ...ONE_BY_ONE], env, more), 130);
      const doc = JSON.parse(r.stdout) as { run_id: string; outcome_unknown: string[] };
      expect(doc.outcome_unknown).toHaveLength(1);
      const shown = await expectExit('runs show', json(['runs', 'show', doc.run_id], env), 0);
      const states = (JSON.parse(shown.stdout) as { payouts: Array<{ state: string }> }).payouts;
      expect(states.map((p) => p.state)).toContain('in_flight');
    } finally {
      await cut.close();
    }
  });

  it('config set of each setting, and config check of a shared history', async () => {
    const h = home();
    const env = { HOME: h.env.HOME!, XDG_CONFIG_HOME: h.env.XDG_CONFIG_HOME! };
    const set = (key: string, value: string) => json(['config', 'set', key, value], env);
    await expectExit('config set', set('base_url', 'https://payouts.example.invalid'), 0);
    // A password on the command line is refused (its error document); without one, stored.
    await expectExit('config set', set('state_url', 'postgres://u:pw@127.0.0.1:1/x'), 2);
    const url = await expectExit('config set', set('state_url', 'postgres://u@127.0.0.1:1/x'), 0);
    expect(JSON.parse(url.stdout)).toMatchObject({ value: 'postgres://u@127.0.0.1:1/x' });
    await expectExit('config set', set('quiet_time', 'default'), 0);
    await expectExit('config set', set('base_url', 'default'), 0);
    const shared = { ...h.env, PAYOUTS_STATE_URL: await recycledDatabase() };
    const checked = await expectExit('config check', json(['config', 'check'], shared), 0);
    expect(JSON.parse(checked.stdout).history).not.toBeNull();
  });

  it('every command: an internal error (exit 1), and a stop before its own document (130)', async () => {
    for (const command of leafCommands()) {
      const argv = [...command.split(' '), '--json'];
      for (const report of [reportUnfinished, reportStopped]) {
        const { runtime, stdout, stderr } = memoryRuntime();
        const code = await report(argv, runtime);
        const r = { code, stdout: stdout(), stderr: stderr() };
        await expectExit(command, Promise.resolve(checked(argv, r)), code);
      }
    }
  });

  it('reached every command on every exit its --help lists, 1 and 130', () => {
    // send --prepare's prepared run: its errors are send documents.
    const expected: Record<string, readonly number[]> = { 'send prepare': [0] };
    for (const c of leafCommands()) expected[c] = [...(COMMAND_EXIT_CODES[c] ?? [0, 2]), 1, 130];
    const missing = Object.entries(expected).flatMap(([c, codes]) =>
      codes.filter((x) => !seen.get(c)?.has(x)).map((x) => `${c}: exit ${x}`),
    );
    expect(missing).toEqual([]);
  });
});

/** PAYOUTS_TEST_JSON_STATS=1 prints how much the mutation test covered. */
function stats(line: string): void {
  if (process.env.PAYOUTS_TEST_JSON_STATS) console.log(line);
}

/** A document of this file, reduced to its shape, with its mistakes. */
interface Material {
  file: string;
  argv: readonly string[];
  code: number;
  doc: unknown;
  mutations: Mutation[];
}

/** Each distinct shape of document this file printed, with its mutations (json-mutations.ts). */
function material(): Material[] {
  return distinctShapes(recorder.documents).map((d) => ({
    ...d,
    mutations: mutationsOf(d.doc, (d.doc as { command?: string | null }).command ?? null),
  }));
}

/** The mutations a validator accepted that it must not have, as lines. */
function acceptedLines(m: Material, accepted: readonly number[]): string[] {
  const where = `${m.file} (payouts ${m.argv.join(' ')}, exit ${m.code})`;
  const lines: string[] = [];
  const groups = new Map<string, Mutation[]>();
  for (const i of accepted) {
    const mut = m.mutations[i]!;
    if (mut.group) groups.set(mut.group, [...(groups.get(mut.group) ?? []), mut]);
    else
      lines.push(
        `${where} ${pathText(mut.path)}: ${mut.kind} ${JSON.stringify(mut.value ?? mut.key ?? null)}`,
      );
  }
  for (const [path, muts] of groups) {
    if (muts.length > 1)
      lines.push(
        `${where} ${path}: null or any of ${muts.map((x) => JSON.stringify(x.value)).join(', ')}`,
      );
  }
  return lines;
}

describe('the schemas refuse mechanical mistakes in every shape of document printed above', () => {
  it('reach every schema file, with every kind of mistake', () => {
    const all = material();
    const files = new Set(all.map((m) => m.file));
    expect([...schemaFiles().keys()].filter((f) => !files.has(f))).toEqual([]);
    const kinds = new Set(all.flatMap((m) => m.mutations.map((x) => x.kind)));
    expect([...kinds].sort()).toEqual([...MUTATION_KINDS].sort());
  });

  it('ajv refuses each', () => {
    const all = material();
    const lines = all.flatMap((m) => acceptedLines(m, acceptedByAjv(m.file, m.doc, m.mutations)));
    const count = all.reduce((n, m) => n + m.mutations.length, 0);
    stats(
      `ajv: ${all.length} shapes of ${recorder.documents.length} documents, ${count} mutations`,
    );
    expect(lines).toEqual([]);
  });

  it('python-jsonschema takes every document and refuses each mistake', (ctx) => {
    const missing = pythonJsonschemaMissing();
    if (missing) ctx.skip(`second validator not checked: ${missing}`);
    const all = material();
    const docs = recorder.documents.map((d) => ({ file: d.file, doc: d.doc, mutations: [] }));
    const checked = firstOfEachKind(all);
    const verdict = checkWithPython([...docs, ...checked]);
    expect(verdict.schema_errors).toEqual([]);
    const invalid = verdict.docs
      .slice(0, docs.length)
      .flatMap((v, i) =>
        v.error
          ? [`${docs[i]!.file} (payouts ${recorder.documents[i]!.argv.join(' ')}): ${v.error}`]
          : [],
      );
    expect(invalid).toEqual([]);
    const lines = checked.flatMap((m, i) =>
      acceptedLines(m, verdict.docs[docs.length + i]!.accepted),
    );
    const count = checked.reduce((n, m) => n + m.mutations.length, 0);
    stats(`python-jsonschema ${verdict.versions.jsonschema}: ${count} mutations`);
    expect(lines).toEqual([]);
  });
});
