import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  SANDBOX_CREDENTIALS,
  type SandboxHandle,
  type SandboxOptions,
  startSandbox,
} from '../../../src/sandbox/index.js';

/** The sandbox credentials as request headers. */
export const AUTH = {
  'Client-Id': SANDBOX_CREDENTIALS.clientId,
  'Client-Secret': SANDBOX_CREDENTIALS.clientSecret,
};

/** A fresh temp folder standing for the CLI's state folder. */
export function tempState(): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'payouts-sandbox-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Tracks sandboxes and temp folders of a test file, to close and remove them after each test. */
export class Fixture {
  private readonly handles: SandboxHandle[] = [];
  private readonly dirs: Array<{ cleanup(): void }> = [];
  private readonly servers: Server[] = [];

  /** A new temp state folder. */
  state(): string {
    const s = tempState();
    this.dirs.push(s);
    return s.dir;
  }

  /** Starts a sandbox on a free port (with a new temp state folder unless given). */
  async start(opts: Partial<SandboxOptions> = {}): Promise<SandboxHandle> {
    const h = await startSandbox({ stateDir: opts.stateDir ?? this.state(), ...opts });
    this.handles.push(h);
    return h;
  }

  /**
   * A local webhook receiver answering with `status(n)` for the nth call, after `answerAfter`:
   * milliseconds, or a promise (a receiver that holds its answers until the test lets go).
   */
  async receiver(
    status: (n: number) => number = () => 200,
    answerAfter: number | Promise<unknown> = 0,
  ): Promise<{
    url: string;
    calls: Array<{ body: unknown }>;
    next(): Promise<unknown>;
    /** How many deliveries have ended, answered or dropped by the sender. */
    ended(): number;
    /** Resolves once `n` deliveries have ended. */
    endedCount(n: number): Promise<void>;
  }> {
    const calls: Array<{ body: unknown }> = [];
    const waiters: Array<() => void> = [];
    let ended = 0;
    const server = createServer((req: IncomingMessage, res) => {
      let text = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => {
        text += d;
      });
      res.on('close', () => {
        ended += 1;
        for (const w of waiters.splice(0)) w();
      });
      req.on('end', () => {
        calls.push({ body: JSON.parse(text) });
        for (const w of waiters.splice(0)) w();
        const code = status(calls.length);
        const answer = () => {
          if (!res.destroyed) res.writeHead(code).end();
        };
        if (typeof answerAfter === 'number') setTimeout(answer, answerAfter);
        else void answerAfter.then(answer);
      });
    });
    this.servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    let seen = 0;
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise<void>((r) => waiters.push(r));
    };
    return {
      url: `http://127.0.0.1:${port}/hook`,
      calls,
      /** Resolves with the next call's body not yet returned. */
      next: async () => {
        await until(() => calls.length > seen);
        seen += 1;
        return calls[seen - 1]?.body;
      },
      ended: () => ended,
      endedCount: (n) => until(() => ended >= n),
    };
  }

  /** Closes every sandbox and receiver and removes the temp folders. */
  async cleanup(): Promise<void> {
    await Promise.all(this.handles.splice(0).map((h) => h.close()));
    for (const s of this.servers.splice(0)) {
      s.closeAllConnections();
      s.close();
    }
    for (const d of this.dirs.splice(0)) d.cleanup();
  }
}

/** An answer as the tests inspect it. */
export interface Reply {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary envelope fields.
  body: any;
}

/** Sends a request to the sandbox and parses its JSON answer. */
export async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = AUTH,
): Promise<Reply> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** POSTs a create request. */
export function createPayouts(base: string, body: unknown, headers?: Record<string, string>) {
  return call(base, 'POST', '/api/v1/payouts', body, headers);
}

/** GETs a payout's status. */
export function getStatus(base: string, ref: string, headers?: Record<string, string>) {
  return call(base, 'GET', `/api/v1/payouts/${encodeURIComponent(ref)}`, undefined, headers);
}

/** A valid payout object, with overrides. */
export function payout(ref: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    amount: 10,
    currency: 'USD',
    recipient: 'alice@example.com',
    reference_id: ref,
    ...over,
  };
}
