import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { fixture } from './cli.js';

/** One request a test server received. */
export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  at: number;
}

/** A purpose-built HTTP server on 127.0.0.1 that records what it receives. */
export interface TestServer {
  url: string;
  port: number;
  requests: SeenRequest[];
  /** Most requests that were being answered at the same time. */
  maxInFlight(): number;
  close(): Promise<void>;
}

/** Answers a request; may be async (to delay the answer). */
export type Handler = (req: IncomingMessage, res: ServerResponse) => unknown;

/** Tracks open sockets so close() does not wait for keep-alive connections. */
function trackSockets(server: ReturnType<typeof createServer>): Set<Socket> {
  const sockets = new Set<Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return sockets;
}

/** Starts a server on 127.0.0.1 with a free port. */
export async function startServer(handler: Handler): Promise<TestServer> {
  const requests: SeenRequest[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const server = createServer((req, res) => {
    requests.push({
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      at: Date.now(),
    });
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    res.on('close', () => {
      inFlight -= 1;
    });
    Promise.resolve(handler(req, res)).catch(() => {
      res.destroy();
    });
  });
  const sockets = trackSockets(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    maxInFlight: () => maxInFlight,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Writes a JSON answer. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(text);
}

/** The success envelope around a payout record. */
export function recordEnvelope(ref: string, status: string, extra: Record<string, unknown> = {}) {
  return {
    success: true,
    message: ['Payout retrieved'],
    data: {
      reference_id: ref,
      status,
      amount: 25.5,
      currency: 'EUR',
      recipient: 'ann@example.com',
      description: 'test payout',
      transaction_id: `tx-${ref}`,
      created_at: '2024-05-01T10:00:00Z',
      updated_at: '2024-05-01T10:05:00Z',
      ...extra,
    },
  };
}

/** The error envelope of the interface. */
export function errorEnvelope(text: string) {
  return { success: false, message: [text], data: [] };
}

/** The reference_id of a status request path, or undefined. */
export function refOf(req: IncomingMessage): string | undefined {
  const m = /\/api\/v1\/payouts\/([^/?]+)$/.exec(req.url ?? '');
  return m ? decodeURIComponent(m[1] as string) : undefined;
}

/** What a forward proxy saw: CONNECT targets and absolute-URI requests. */
export interface ProxySeen {
  method: string;
  target: string;
}

/**
 * A tiny forward proxy on 127.0.0.1: tunnels CONNECT host:port and forwards absolute-URI
 * requests, recording both. Targets are reached on 127.0.0.1 whatever their host name, so
 * tests never leave the machine.
 */
export async function startProxy(): Promise<TestServer & { seen: ProxySeen[] }> {
  const seen: ProxySeen[] = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', target: req.url ?? '' });
    let target: URL;
    try {
      target = new URL(req.url ?? '');
    } catch {
      res.writeHead(400).end('absolute URI expected');
      return;
    }
    const upstream = request(
      {
        host: '127.0.0.1',
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: req.method,
        headers: req.headers,
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  server.on('connect', (req, clientSocket: Socket, head: Buffer) => {
    seen.push({ method: 'CONNECT', target: req.url ?? '' });
    const port = Number((req.url ?? '').split(':').pop());
    const upstream = connect(port, '127.0.0.1', () => {
      clientSocket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(clientSocket);
      clientSocket.pipe(upstream);
    });
    upstream.on('error', () => clientSocket.destroy());
    clientSocket.on('error', () => upstream.destroy());
  });
  const sockets = trackSockets(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests: [],
    seen,
    maxInFlight: () => 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * An https server on 127.0.0.1 whose certificate (test/fixtures/status/tls-cert.pem) no
 * public CA signed; it answers every lookup with a successful payout.
 */
export async function startTlsServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createHttpsServer(
    {
      cert: readFileSync(fixture('status', 'tls-cert.pem')),
      key: readFileSync(fixture('status', 'tls-key.pem')),
    },
    (req, res) => sendJson(res, 200, recordEnvelope(refOf(req) ?? '?', 'success')),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
