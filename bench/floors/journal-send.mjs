// Floor for `payouts send FILE --yes --json` that keeps the journal's rules, and does nothing
// more: csv-parse reads the file and each row is written to a payouts table (SHA-256 payout
// hash, 64 rows to an INSERT, 10,000 to a commit), as intake must before anything is sent.
// Then the rows are read back in order and posted in chunks with raw undici.request through one
// shared Agent, CONCURRENCY at a time; each request's intent is committed (synced) before its
// first byte goes out, two chunks' intents at a time (two prepared ahead is the most the crash
// rule allows), and the results of the answers that came back meanwhile ride with that commit.
// Last, every result is read back for the output. The same SQLite settings as state.db (WAL,
// FULL). The HTTP is bench/floors/undici-send.mjs's. Prints {"rows","requests","success_count","commits","read"}.
//
// Usage: node bench/floors/journal-send.mjs FILE BASE_URL DIR [CHUNK] [CONCURRENCY]

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { parse } from 'csv-parse';
import { Agent, request } from 'undici';

const [file, baseUrl, dir, chunkText = '100', concurrencyText = '4'] = process.argv.slice(2);
const CHUNK = Number(chunkText);
const CONCURRENCY = Number(concurrencyText);
const db = new Database(join(dir, 'journal-send-floor.db'));
db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
  CREATE TABLE payouts (run INTEGER NOT NULL, row INTEGER NOT NULL, reference_id TEXT NOT NULL,
    file TEXT, line INTEGER, location TEXT, amount TEXT, currency TEXT, recipient TEXT,
    description TEXT, hash TEXT, hash_version INTEGER NOT NULL, PRIMARY KEY (run, row)) WITHOUT ROWID;
  CREATE UNIQUE INDEX payouts_reference ON payouts (reference_id, run);
  CREATE TABLE intents (run INTEGER NOT NULL, row INTEGER NOT NULL, state TEXT NOT NULL, req INTEGER,
    sent_at TEXT, note TEXT, updated_at TEXT, PRIMARY KEY (run, row)) WITHOUT ROWID;
  CREATE TABLE results (run INTEGER NOT NULL, row INTEGER NOT NULL, req INTEGER, status TEXT NOT NULL,
    transaction_id TEXT, charges TEXT, message TEXT, at TEXT, PRIMARY KEY (run, row)) WITHOUT ROWID;`);

const rowsOf = (n, width) =>
  new Array(n).fill(`(${new Array(width).fill('?').join(', ')})`).join(', ');

// Intake: every row parsed, hashed and stored before the first request.
const insertMany = db.prepare(`INSERT INTO payouts VALUES ${rowsOf(64, 12)}`);
const insertOne = db.prepare(`INSERT INTO payouts VALUES ${rowsOf(1, 12)}`);
let rows = 0;
let values = [];
db.exec('BEGIN');
for await (const r of createReadStream(file).pipe(parse({ bom: true, columns: true }))) {
  const hash = createHash('sha256')
    .update(`${r.reference_id.length}:${r.reference_id}|${r.amount}|${r.currency}|${r.recipient}`)
    .digest('hex');
  values.push(1, rows, r.reference_id, file, rows + 2, `line ${rows + 2}`, r.amount, r.currency);
  values.push(r.recipient, r.description || null, hash, 2);
  rows++;
  if (values.length === 64 * 12) {
    insertMany.run(values);
    values = [];
  }
  if (rows % 10_000 === 0) db.exec('COMMIT; BEGIN');
}
for (let i = 0; i < values.length; i += 12) insertOne.run(values.slice(i, i + 12));
db.exec('COMMIT');

// Send: intents committed ahead of their requests, results with the next commit.
const page = db
  .prepare(
    'SELECT row, reference_id, amount, currency, recipient, description FROM payouts WHERE run = 1 AND row >= ? ORDER BY row LIMIT ?',
  )
  .raw(true);
const intent = (n) =>
  db.prepare(
    `INSERT INTO intents (run, row, state, req, sent_at, updated_at) VALUES ${rowsOf(n, 6)}`,
  );
const result = (n) =>
  db.prepare(
    `INSERT INTO results (run, row, req, status, transaction_id, at) VALUES ${rowsOf(n, 6)}`,
  );

/** A payout as the CLI writes it: the amount is the file's text, as a JSON number. */
function payoutJson(c) {
  let out = `{"amount":${c[2]},"currency":${JSON.stringify(c[3])},"recipient":${JSON.stringify(c[4])},"reference_id":${JSON.stringify(c[1])}`;
  if (c[5]) out += `,"description":${JSON.stringify(c[5])}`;
  return `${out}}`;
}

const url = `${baseUrl}/api/v1/payouts`;
const dispatcher = new Agent({ connections: CONCURRENCY });
const headers = {
  'client-id': process.env.PAYOUTS_CLIENT_ID ?? 'bench',
  'client-secret': process.env.PAYOUTS_CLIENT_SECRET ?? 'bench-secret',
  'content-type': 'application/json',
  accept: 'application/json',
};
let commits = 0;
let nextRow = 0;
let nextReq = 1;
let inFlight = 0;
let successCount = 0;
/** Chunks whose intent is committed, waiting for a place. */
const prepared = [];
/** Result rows (6 values each) of answers not committed yet. */
let answered = [];

/** Commits the intents of the next two chunks with the results answered so far. */
function prepareTwo() {
  const chunk = page.all(nextRow, 2 * CHUNK);
  if (!chunk.length) return;
  nextRow += chunk.length;
  const at = new Date().toISOString();
  const iv = [];
  const bodies = [];
  for (let k = 0; k < chunk.length; k += CHUNK) {
    const part = chunk.slice(k, k + CHUNK);
    const req = nextReq++;
    for (const c of part) iv.push(1, c[0], 'in_flight', req, at, at);
    bodies.push({
      req,
      rows: part.map((c) => c[0]),
      body: `{"payouts":[${part.map(payoutJson).join(',')}]}`,
    });
  }
  const results = answered;
  answered = [];
  db.transaction(() => {
    intent(iv.length / 6).run(iv);
    if (results.length) result(results.length / 6).run(results);
  })();
  commits++;
  prepared.push(...bodies);
}

await new Promise((resolve, reject) => {
  const send = async ({ req, rows: sent, body }) => {
    const res = await request(url, { method: 'POST', headers, body, dispatcher });
    const doc = await res.body.json();
    if (res.statusCode !== 200 || !doc.success) {
      throw new Error(`HTTP ${res.statusCode}: ${JSON.stringify(doc).slice(0, 200)}`);
    }
    successCount += doc.data.success_count;
    const at = new Date().toISOString();
    doc.data.results.forEach((r, i) => {
      answered.push(1, sent[i], req, r.status, r.transaction_id ?? null, at);
    });
    inFlight--;
    pump();
  };
  const pump = () => {
    for (;;) {
      if (!prepared.length && nextRow < rows) prepareTwo();
      if (inFlight >= CONCURRENCY || !prepared.length) break;
      inFlight++;
      send(prepared.shift()).catch(reject);
    }
    if (!inFlight && !prepared.length && nextRow >= rows) resolve();
  };
  pump();
});
await dispatcher.close();
if (answered.length) {
  const results = answered;
  db.transaction(() => result(results.length / 6).run(results))();
  commits++;
}

// Output: every result read back with its payout.
const out = db
  .prepare(
    'SELECT p.row, p.reference_id, p.amount, p.currency, d.status, d.transaction_id FROM results d JOIN payouts p ON p.run = d.run AND p.row = d.row WHERE d.run = 1 AND d.row >= ? ORDER BY d.row LIMIT 1000',
  )
  .raw(true);
let read = 0;
for (let from = 0; ; ) {
  const got = out.all(from);
  read += got.length;
  if (got.length < 1000) break;
  from = got[got.length - 1][0] + 1;
}
db.close();
process.stdout.write(
  `${JSON.stringify({ rows, requests: nextReq - 1, success_count: successCount, commits, read })}\n`,
);
