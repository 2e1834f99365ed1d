/**
 * A PostgreSQL server of a test's own, which it may stop and start again (a database that
 * goes away mid-send). The tests' shared server (pg-server.ts) must stay up for the others,
 * so this one is started apart, with the same steps: it costs a second or two, so one test
 * file uses it.
 */
import { rmSync } from 'node:fs';
import { type PgServer, preparePgFolders, runPostgres, startPostgres } from './pg-server.js';

/** A private server: its URL (a database of its own), and how to stop, start and remove it. */
export interface PrivatePg {
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  remove(): Promise<void>;
}

/** Starts a private server on a free loopback port, its binaries and data reachable as pg-server.ts makes them. */
export async function startPrivatePg(): Promise<PrivatePg> {
  const folders = await preparePgFolders();
  let server: PgServer | undefined = await startPostgres(folders);
  const { url, port } = server;
  return {
    url,
    async stop() {
      await server?.stop();
      server = undefined;
    },
    async start() {
      server ??= await runPostgres(folders, port);
    },
    async remove() {
      await server?.stop().catch(() => {});
      server = undefined;
      rmSync(folders.root, { recursive: true, force: true });
    },
  };
}
