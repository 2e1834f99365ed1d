// A minimal Payout Service for the benchmarks: node:http on 127.0.0.1, answering at once.
// Run in its own process (so its CPU is not counted with the CLI's or a floor's); prints
// {"port":N} on stdout once it listens.
//
//   POST /api/v1/payouts       -> every payout "success" (the interface's envelope)
//   GET  /api/v1/payouts/:ref  -> a success record for any reference, but 404 (not found) for one
//                                 starting with a small letter
//   GET  /__stats              -> {distinct, duplicates, payouts, requests, bad_requests,
//                                  first_request_at}
//   POST /__reset              -> forgets every reference and zeroes the counts
//
// `--latency MS` answers each create request MS milliseconds after it arrives, as a distant
// service would. `--ledger`: GET finds only the references it received (404 for any other), as
// a real service does; a create request applies its payouts as it arrives.
//
// It checks nothing about credentials or amounts: it only counts what it receives, so the
// benchmark can prove that exactly N distinct references arrived, none of them twice.
// SIGTERM / SIGINT print the counts on stderr and exit 0.

import http from 'node:http';

const CREATE = '/api/v1/payouts';
const latencyAt = process.argv.indexOf('--latency');
const LATENCY_MS = latencyAt === -1 ? 0 : Number(process.argv[latencyAt + 1]);
const STATUS = '/api/v1/payouts/';
const LEDGER = process.argv.includes('--ledger');

let seen = new Set();
/** With --ledger, each payout as it was received, by reference. */
let held = new Map();
let duplicates = 0;
let payouts = 0;
let requests = 0;
let badRequests = 0;
/** When the first create request's headers arrived (ms since the epoch, sub-ms), or null. */
let firstRequestAt = null;

function stats() {
  return {
    distinct: seen.size,
    duplicates,
    payouts,
    requests,
    bad_requests: badRequests,
    first_request_at: firstRequestAt,
  };
}

function send(res, status, doc) {
  const body = JSON.stringify(doc);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

function fail(res, status, message) {
  badRequests++;
  send(res, status, { success: false, message: [message], data: [] });
}

function readBody(req, done) {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
}

function create(req, res) {
  readBody(req, (text) => {
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      fail(res, 400, 'Invalid JSON body');
      return;
    }
    const list = body?.payouts;
    if (!Array.isArray(list) || list.length === 0) {
      fail(res, 422, 'payouts is required: a non-empty array of payout objects');
      return;
    }
    requests++;
    const results = new Array(list.length);
    for (let i = 0; i < list.length; i++) {
      const p = list[i] ?? {};
      const ref = p.reference_id;
      payouts++;
      if (seen.has(ref)) duplicates++;
      else seen.add(ref);
      if (LEDGER) held.set(ref, p);
      results[i] = {
        reference_id: ref,
        status: 'success',
        transaction_id: `T${ref}`,
        amount: p.amount,
        currency: p.currency,
        charges: 0,
      };
    }
    const answer = () =>
      send(res, 200, {
        success: true,
        message: ['ok'],
        data: {
          success_count: list.length,
          failed_count: 0,
          batch_reference: 'B',
          results,
        },
      });
    if (LATENCY_MS > 0) setTimeout(answer, LATENCY_MS);
    else answer();
  });
}

function status(res, encodedRef) {
  let ref;
  try {
    ref = decodeURIComponent(encodedRef);
  } catch {
    fail(res, 400, 'Invalid reference_id in path: bad percent-encoding');
    return;
  }
  // A reference starting with a small letter is one nobody sent (the history rows' typo).
  if (LEDGER ? !seen.has(ref) : /^[a-z]/.test(ref)) {
    send(res, 404, { success: false, message: ['Payout not found'], data: [] });
    return;
  }
  const p = held.get(ref);
  send(res, 200, {
    success: true,
    message: ['Payout retrieved'],
    data: {
      reference_id: ref,
      status: 'success',
      amount: p ? Number(p.amount) : 10.5,
      currency: p?.currency ?? 'EUR',
      created_at: '2026-11-22T10:00:00.000Z',
      updated_at: '2026-11-22T10:00:01.000Z',
      transaction_id: `T${ref}`,
      recipient: p?.recipient ?? 'bench@example.com',
      description: '',
    },
  });
}

const server = http.createServer((req, res) => {
  const url = (req.url ?? '/').split('?')[0];
  if (req.method === 'POST' && url === CREATE) {
    // The same clock as the bench's spawn time: performance's origin plus its offset.
    firstRequestAt ??= performance.timeOrigin + performance.now();
    return create(req, res);
  }
  if (req.method === 'GET' && url.startsWith(STATUS) && url.length > STATUS.length) {
    req.resume();
    return status(res, url.slice(STATUS.length));
  }
  req.resume();
  if (req.method === 'GET' && url === '/__stats') return send(res, 200, stats());
  if (req.method === 'POST' && url === '/__reset') {
    seen = new Set();
    held = new Map();
    duplicates = 0;
    payouts = 0;
    requests = 0;
    badRequests = 0;
    firstRequestAt = null;
    return send(res, 200, stats());
  }
  fail(res, 404, 'Not found');
});
// Keep idle connections open across a whole run.
server.keepAliveTimeout = 120_000;
server.headersTimeout = 130_000;

function stop() {
  process.stderr.write(`service: ${JSON.stringify(stats())}\n`);
  server.close();
  server.closeAllConnections?.();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`${JSON.stringify({ port: addr.port })}\n`);
});
