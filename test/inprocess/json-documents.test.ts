import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandPathOf } from '../../src/commands/command.js';
import { tempHome } from '../helpers/cli.js';
import { commandTree, hasSchema, schemaFileOf } from '../helpers/json-schema.js';
import { LedgerService } from '../helpers/ledger-service.js';
import { FakeClock, type MainResult, runMain } from '../helpers/main.js';
import { freshDatabase, recycledDatabase, teamRoles } from '../helpers/pg.js';
import { FakeSecretStore } from '../helpers/secret-store.js';

// Issue 41, item 4: every command's --json document has schema_version and a schema in
// docs/schema/, on every exit. runMain checks each document against the schema of the
// command its argv runs (test/helpers/json-schema.ts); this file makes each command print
// one on success, on each error it can meet, and stopped.

/** Every leaf command of the tree, as its path ("runs show"). */
function leafCommands(cmd: Command = commandTree()): string[] {
  if (cmd.commands.length === 0) return [commandPathOf(cmd)];
  return cmd.commands.flatMap((c) => leafCommands(c));
}

let svc: LedgerService;
let refusing: LedgerService;
let garbled: LedgerService;
const homes: Array<{ cleanup(): void }> = [];
beforeAll(async () => {
  svc = await LedgerService.start();
  svc.preload({ reference_id: 'HELD-1', amount: 1.25, currency: 'EUR', recipient: 'a@ex.com' });
  garbled = await LedgerService.start();
  garbled.onGet = (_ref, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>');
    return true;
  };
  refusing = await LedgerService.start();
  refusing.onGet = (_ref, res) => {
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ success: false, message: ['Invalid API credentials'], data: [] }));
    return true;
  };
});
afterAll(async () => {
  await svc.close();
  await refusing.close();
  await garbled.close();
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

describe('every command prints one document of its schema', () => {
  it('has a schema for every command of the tree', () => {
    const missing = leafCommands().filter((c) => !hasSchema(c));
    expect(missing.map((c) => `${c}: docs/schema/${schemaFileOf(c)}`)).toEqual([]);
  });

  it('on a usage error, for every command', async () => {
    for (const command of leafCommands()) {
      await expectExit(command, json([...command.split(' '), '--no-such-flag'], {}), 2);
    }
  });

  it('send and status: success, not found, stopped', async () => {
    const h = home();
    await expectExit('send', json(['send', h.file, '--yes'], h.env), 0);
    const other = home();
    const stop = { interrupt: stopped() };
    await expectExit('send', json(['send', other.file, '--yes'], other.env, stop), 130);
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
      json(['state', 'push'], { ...h.env, PAYOUTS_STATE_URL: await freshDatabase() }),
      0,
    );
    await expectExit('state push', json(['state', 'push'], h.env), 2);
  });

  it('approvals and approve refuse a state folder with their error document', async () => {
    const h = home();
    await expectExit('approvals show', json(['approvals'], h.env), 2);
    await expectExit('approve', json(['approve', 'p0123456789abcde'], h.env), 2);
  });

  it('approvals and approve on a shared history: set, approved, refused, shown, off', async () => {
    const admin = await recycledDatabase();
    const h = home();
    const as = (url: string) => ({ ...h.env, PAYOUTS_STATE_URL: url });
    await expectExit('approvals require', json(['approvals', 'require'], as(admin)), 0);
    const { ana, bob } = await teamRoles(admin);
    const prepared = await runMain(['send', h.file, '--prepare'], { env: as(ana) });
    const prep = /Prepared run (p[0-9a-f]{15})/.exec(prepared.stdout)?.[1];
    expect(prep, prepared.stderr).toBeDefined();
    await expectExit('approve', json(['approve', prep!, '--yes'], as(bob)), 0);
    await expectExit('approve', json(['approve', prep!, '--yes'], as(bob)), 2);
    await expectExit('approvals off', json(['approvals', 'off'], as(ana)), 2);
    await expectExit('approvals off', json(['approvals', 'off'], as(admin)), 0);
    await expectExit('approvals show', json(['approvals', 'show'], as(bob)), 0);
    const shown = await expectExit('runs show', json(['runs', 'show', prep!], as(bob)), 0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ prepared_run_id: prep, state: 'approved' });
    const listed = await expectExit('runs list', json(['runs'], as(bob)), 0);
    expect(JSON.parse(listed.stdout)).toMatchObject({
      runs: [],
      prepared_runs: [{ state: 'approved' }],
    });
  });

  it('reached every command with a success and an error', () => {
    const missing = leafCommands().flatMap((c) => {
      const codes = seen.get(c) ?? new Set();
      const gaps = [];
      if (!codes.has(0)) gaps.push(`${c}: no success`);
      if (![...codes].some((x) => x !== 0)) gaps.push(`${c}: no error`);
      return gaps;
    });
    expect(missing).toEqual([]);
  });
});
