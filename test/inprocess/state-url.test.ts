import { writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { freshDatabase, recycledDatabase, schemaOf } from '../helpers/pg.js';

// Issue 31, item 4: a state URL pg cannot use as meant is a usage error (exit 2) naming the
// expected form, before anything is read or sent, and its password never shows.

const fixture = ledgerPerTest();
const SECRET = 'pa55-w0rd-canary';

const REFUSED: Array<{ url: string; says: RegExp }> = [
  {
    url: `postgres://u:${SECRET}@127.0.0.1:5432:99/db`,
    says: /its port "5432:99" is not a number from 1 to 65535/,
  },
  {
    url: `postgres://u:${SECRET}@[::1:5432/db`,
    says: /its IPv6 address opens with \[ but is not closed with \]/,
  },
  {
    url: `postgres://u:${SECRET}@127.0.0.1:5432/db?sslmode=bogus`,
    says: /sslmode="bogus", which is not one of disable, prefer, require, verify-ca, verify-full, no-verify/,
  },
  {
    url: `postgres://u:pa55/${SECRET}@127.0.0.1:5432/db`,
    says: /a \/ \? or # before its last @ ends the host early/,
  },
];

describe('a state URL that cannot be used', () => {
  for (const { url, says } of REFUSED) {
    it(`is refused with exit 2 and the expected form: ${url.replace(SECRET, '…')}`, async () => {
      const svc = await fixture.start();
      const home = fixture.home();
      const file = join(home.dir, 'run.csv');
      writeFileSync(file, 'reference_id,amount,currency,recipient\nU-1,1.00,EUR,a@example.com\n');
      for (const [args, env] of [
        [['send', file, '--yes'], { ...svc.env(home.env), PAYOUTS_STATE_URL: url }],
        [['send', file, '--yes', '--json', '--state-url', url], svc.env(home.env)],
        [['runs', '--state-url', url], home.env],
        [['config', 'set', 'state_url', url], home.env],
      ] as const) {
        const r = await runMain([...args], { env, clock: new FakeClock() });
        expect(r.code, r.stderr).toBe(2);
        const text = `${r.stdout}\n${r.stderr}`;
        expect(text).toMatch(says);
        expect(text).not.toMatch(/internal error|Invalid URL/);
        expect(text).not.toContain(SECRET);
        expect(text).toContain('u:***@');
      }
      expect(svc.creates).toBe(0);
    });
  }

  it('names the form a usable URL takes, with how to write a password holding @', async () => {
    const home = fixture.home();
    const r = await runMain(['runs', '--state-url', `postgres://u:${SECRET}@h:x/db`], {
      env: home.env,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('postgres://USER:PASSWORD@HOST:5432/DATABASE');
    expect(r.stderr).toContain('%40');
  });
});

// Issue 42, item 2: a shared history that cannot be reached says why, in words, and the fix.
describe('a shared history that cannot be reached', () => {
  /** `payouts runs` against `url`: the exit code (7 unless said), the message, never the password. */
  async function refusal(url: string, password: string, code = 7): Promise<string> {
    const home = fixture.home();
    const r = await runMain(['runs'], { env: { ...home.env, PAYOUTS_STATE_URL: url } });
    expect(r.code, r.stderr).toBe(code);
    expect(r.stderr).not.toContain(password);
    expect(r.stderr).not.toMatch(/was lost|reads back what this run left in doubt/);
    return r.stderr;
  }

  it('says nothing listens at a closed port', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    await new Promise((r) => server.close(r));
    const text = await refusal(`postgres://u:${SECRET}@127.0.0.1:${port}/db`, SECRET);
    expect(text).toContain(
      `cannot connect to the shared history at postgres://u:***@127.0.0.1:${port}/db: nothing is listening at 127.0.0.1:${port} (the connection was refused): start PostgreSQL there, or correct the host or port in the state URL`,
    );
    expect(text).not.toContain('ECONNREFUSED');
  });

  it('says a host name is not known', async () => {
    const text = await refusal(
      `postgres://u:${SECRET}@history.invalid:5432/db?sslmode=disable`,
      SECRET,
    );
    expect(text).toMatch(
      /: the host name "history\.invalid" is not known \(its DNS lookup failed( for now)?\): check its spelling/,
    );
    expect(text).not.toMatch(/getaddrinfo|ENOTFOUND|EAI_AGAIN/);
  });

  // Issue 48, item 4: what running again cannot mend is not exit 7, which a CI job retries.
  it('says the password was refused, and how to write one holding @: exit 3', async () => {
    const url = new URL(await freshDatabase());
    url.password = 'wrong-pass';
    const text = await refusal(url.toString(), 'wrong-pass', 3);
    expect(text).toContain(`PostgreSQL refused the password of user "${url.username}": check it;`);
    expect(text).toContain('write each percent-encoded in the URL (@ as %40');
    // Typed as it is in a shell: an "@" left as it is is named.
    const typed = url.toString().replace('wrong-pass', 'wr@ng');
    expect(await refusal(typed, 'wr@ng', 3)).toContain(
      'the password in the URL holds "@", which must be written percent-encoded (@ as %40)',
    );
    // A role the server does not know is refused as its password is: exit 3.
    url.username = 'nobody_at_all';
    url.password = SECRET;
    expect(await refusal(url.toString(), SECRET, 3)).toMatch(
      /PostgreSQL (refused the password of|does not let) user "nobody_at_all"/,
    );
  });

  it('says a database or schema does not exist: exit 2, with the fix', async () => {
    const url = new URL(await freshDatabase());
    url.pathname = '/no_such_db';
    const text = await refusal(url.toString(), url.password, 2);
    expect(text).toContain(
      `the database "no_such_db" does not exist on ${url.hostname}:${url.port}: create it`,
    );
    const schema = new URL(await freshDatabase());
    schema.searchParams.set('options', '-c search_path=t_no_such_schema');
    const said = await refusal(schema.toString(), schema.password, 2);
    expect(said).toMatch(/has no schema to use .*create the schema the URL's search_path names/);
  });
});

describe('a role the shared history does not let in', () => {
  it('says which grant is missing, and who gives it, in plain words', async () => {
    const admin = await freshDatabase();
    const schema = schemaOf(admin);
    const home = fixture.home();
    /** `payouts runs` against the history as the role `url` names. */
    const runs = (url: string) =>
      runMain(['runs'], { env: { ...home.env, PAYOUTS_STATE_URL: url }, clock: new FakeClock() });
    const role = `nogrant_${schema.slice(2, 10)}`;
    const as = new URL(admin);
    as.username = role;
    as.password = 'pw';
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    await c.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw'`);
    await c.query(`GRANT USAGE ON SCHEMA ${schema} TO ${role}`);
    await c.end();
    // No tables yet: a person's role cannot make them; their owner's first command does.
    const first = await runs(as.toString());
    expect(first.code).toBe(2);
    expect(first.stderr).toMatch(/permission denied for schema/);
    expect(first.stderr).toContain(
      'which only the owner of its tables may do: run a payouts command once as that role',
    );
    // The tables made by their owner, but no grant to this role.
    const owned = await runs(admin);
    expect(owned.code).toBe(0);
    const later = await runs(as.toString());
    expect(later.code).toBe(2);
    expect(later.stderr).toMatch(/permission denied for table/);
    expect(later.stderr).toContain(
      `The role "${role}" has no grant for this: ask the owner of the history's tables (role "postgres") to grant it, as docs/approvals.md ("Who is who") lists`,
    );
  });
});

// Issue 52, item 6: a history that accepts the connection and never answers ends the command
// within its connect timeout (exit 7), never an endless wait.
describe('a shared history that never answers', () => {
  /** A port that accepts connections and says nothing; `seen` counts them. */
  async function silentEndpoint() {
    const sockets = new Set<import('node:net').Socket>();
    const server = createServer((s) => {
      sockets.add(s);
      s.on('error', () => {});
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    onTestFinished(async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    });
    return { port, seen: () => sockets.size };
  }

  it('payouts runs gives up after connect_timeout, exit 7, saying what did not answer', async () => {
    const silent = await silentEndpoint();
    const home = fixture.home();
    const url = `postgres://u@127.0.0.1:${silent.port}/db?connect_timeout=2`;
    const r = await runMain(['runs', '--json'], { env: { ...home.env, PAYOUTS_STATE_URL: url } });
    expect(r.code).toBe(7);
    expect(r.stderr).toContain(
      `cannot connect to the shared history at ${url}: 127.0.0.1:${silent.port} did not answer within 2 s: check that PostgreSQL runs there`,
    );
    expect(silent.seen()).toBe(1);
  });

  it('a Ctrl-C while it waits stops payouts runs at once (exit 130)', async () => {
    const silent = await silentEndpoint();
    const home = fixture.home();
    const stop = new AbortController();
    const url = `postgres://u@127.0.0.1:${silent.port}/db`;
    const running = runMain(['runs', '--json'], {
      env: { ...home.env, PAYOUTS_STATE_URL: url },
      interrupt: stop.signal,
    });
    while (silent.seen() === 0) await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    const r = await running;
    // Not 7: the connect timeout (10 s) did not end it.
    expect(r.code).toBe(130);
    expect(r.stderr).toContain('error: interrupted');
  });

  it('a send stops at once too while it connects to the history: nothing sent', async () => {
    const silent = await silentEndpoint();
    const svc = await fixture.start();
    const home = fixture.home();
    const file = join(home.dir, 'run.csv');
    writeFileSync(file, 'reference_id,amount,currency,recipient\nU-1,1.00,EUR,a@example.com\n');
    const stop = new AbortController();
    const env = {
      ...svc.env(home.env),
      PAYOUTS_STATE_URL: `postgres://u@127.0.0.1:${silent.port}/db`,
    };
    const running = runMain(['send', file, '--yes', '--json'], { env, interrupt: stop.signal });
    while (silent.seen() === 0) await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    const r = await running;
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(
      /interrupted while connecting to the shared history at postgres:\/\/u@127\.0\.0\.1:\d+\/db: nothing was read or changed there/,
    );
    expect(svc.creates).toBe(0);
  });
});

// Issue 52, item 4: the history's password never on a command line; from the environment or
// ~/.pgpass instead.
describe("the shared history's password", () => {
  it('is refused on --state-url, --to and config set state_url, with the way to give it', async () => {
    const home = fixture.home();
    const url = `postgres://u:${SECRET}@127.0.0.1:5432/db`;
    for (const args of [
      ['runs', '--state-url', url],
      ['state', 'push', '--to', url],
      ['config', 'set', 'state_url', url],
      ['config', 'check', '--state-url', url, '--json'],
    ]) {
      const r = await runMain(args, { env: home.env });
      expect(r.code, args.join(' ')).toBe(2);
      const text = `${r.stdout}\n${r.stderr}`;
      expect(text).toMatch(
        /carries a password on the command line, .*give it in PGPASSWORD, in ~\/\.pgpass/,
      );
      expect(text).not.toContain(SECRET);
    }
  });

  it('comes from PGPASSWORD or ~/.pgpass when the URL has none', async () => {
    const full = new URL(await recycledDatabase());
    const password = decodeURIComponent(full.password);
    full.password = '';
    const bare = full.toString();
    const home = fixture.home();
    const runs = (env: Record<string, string>) =>
      runMain(['runs', '--json'], { env: { ...home.env, PAYOUTS_STATE_URL: bare, ...env } });
    const none = await runs({});
    // Credentials missing, as a refused password is: exit 3, which a CI job does not retry.
    expect(none.code).toBe(3);
    expect(none.stderr).toMatch(
      /the server asks user "\w+" for a password and none was given: give it in PGPASSWORD/,
    );
    expect((await runs({ PGPASSWORD: password })).code).toBe(0);
    const pgpass = join(home.dir, '.pgpass');
    writeFileSync(pgpass, `127.0.0.1:${full.port}:*:${full.username}:${password}\n`, {
      mode: 0o600,
    });
    const fromFile = await runs({});
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(fromFile.stderr).not.toMatch(/deprecat/i);
  });
});
