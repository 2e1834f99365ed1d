/**
 * An insider's setting (issues 39 and 48): a shared history whose tables a role owns that is
 * not a superuser, and people (ana, bob, carol, ci) with broad grants, attacking it with plain
 * SQL as psql would.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { expect } from 'vitest';
import type { CreatePolicy, LedgerOptions, LedgerService } from './ledger-service.js';
import type { tempHome } from './cli.js';
import { FakeClock, runMain } from './main.js';
import { freshDatabase, schemaOf } from './pg.js';

/** Runs statements in one session as a role: the first error's message, or undefined. */
export async function sql(
  url: string,
  ...statements: Array<string | [string, unknown[]]>
): Promise<string | undefined> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    for (const s of statements) {
      const [text, params] = typeof s === 'string' ? [s, []] : s;
      await c.query(text, params);
    }
    return undefined;
  } catch (err) {
    return (err as Error).message;
  } finally {
    await c.end();
  }
}

/** What makes a service and a home for a test (ledgerPerTest). */
export interface Fixture {
  start(policy?: CreatePolicy, options?: LedgerOptions): Promise<LedgerService>;
  home(): ReturnType<typeof tempHome>;
}

export type Team = Awaited<ReturnType<typeof insiderTeam>>;

/**
 * A history owned by a role that is not a superuser, made by its first command `first` (for
 * instance `approvals require`, which turns the rule on), and four people (ana prepares, bob
 * and carol approve, ci sends) granted more than a send needs: every right on the history's
 * tables, TEMP on the database.
 */
export async function insiderTeam(fixture: Fixture, first: string[], policy?: CreatePolicy) {
  const admin = await freshDatabase();
  const schema = schemaOf(admin);
  const svc = await fixture.start(policy);
  const home = fixture.home();
  const sfx = randomBytes(4).toString('hex');
  const names = ['owner', 'ana', 'bob', 'carol', 'ci'].map((n) => `${n}_${sfx}`);
  const as = (name: string) => {
    const u = new URL(admin);
    u.username = name;
    u.password = `pw-${name}`;
    return u.toString();
  };
  const roles = names.map((n) => `CREATE ROLE ${n} LOGIN NOSUPERUSER PASSWORD 'pw-${n}'`);
  expect(await sql(admin, ...roles)).toBe(undefined);
  const [owner, ana, bob, carol, ci] = names.map(as) as [string, string, string, string, string];
  const people = names.slice(1).join(', ');
  expect(
    await sql(
      admin,
      `GRANT USAGE, CREATE ON SCHEMA ${schema} TO ${names[0]}`,
      `GRANT USAGE ON SCHEMA ${schema} TO ${people}`,
      `GRANT TEMP ON DATABASE postgres TO ${people}`,
    ),
  ).toBe(undefined);
  const run = (url: string, args: string[], env: Record<string, string> = {}) =>
    runMain(args, {
      env: { ...svc.env(home.env), PAYOUTS_STATE_URL: url, ...env },
      clock: new FakeClock(),
    });
  const on = await run(owner, first);
  expect(on.stderr).toBe('');
  expect(on.code).toBe(0);
  const history =
    'meta, runs, payouts, intents, results, reports, locks, attempts, withdrawals, checks';
  expect(
    await sql(
      owner,
      `GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON ${history} TO ${people}`,
      `GRANT SELECT ON schema_version, journal, approval_rules TO ${people}`,
      `GRANT SELECT, INSERT ON prepared_runs, prepared_payouts, approvals TO ${people}`,
      `GRANT USAGE ON ALL SEQUENCES IN SCHEMA ${schema} TO ${people}`,
    ),
  ).toBe(undefined);
  const service = `http://localhost:${new URL(svc.url).port}`;
  const roleOf = (url: string) => new URL(url).username;
  return { admin, schema, svc, home, owner, ana, bob, carol, ci, run, service, roleOf };
}
