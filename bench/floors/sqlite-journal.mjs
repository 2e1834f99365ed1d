// What the journal's rules alone cost for `payouts send FILE`, with no HTTP and no checks:
// csv-parse reads the file and each row is written to a payouts table (SHA-256 payout hash,
// 64 rows to an INSERT, 10,000 to a commit); then, per pair of requests of CHUNK payouts, the
// rows are read back in order, their intents and results are written (one synced commit per
// pair, as the CLI's group commit does at best with two intents prepared ahead); then every
// result is read back for the output. The same SQLite settings as state.db (WAL, FULL).
// Prints {"rows","commits","ms"}.
//
// Usage: node bench/floors/sqlite-journal.mjs FILE DIR [CHUNK]

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { parse } from 'csv-parse';

const [file, dir, chunkText = '100'] = process.argv.slice(2);
const CHUNK = Number(chunkText);
const t0 = performance.now();
const db = new Database(join(dir, 'journal-floor.db'));
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

const page = db
  .prepare(
    'SELECT row, reference_id, amount, currency, recipient, description, hash FROM payouts WHERE run = 1 AND row >= ? ORDER BY row LIMIT ?',
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
let commits = 0;
let answered = [];
for (let first = 0, req = 1; first < rows; first += 2 * CHUNK, req += 2) {
  const chunk = page.all(first, 2 * CHUNK);
  const at = new Date().toISOString();
  db.transaction(() => {
    const iv = [];
    for (const c of chunk)
      iv.push(1, c[0], 'in_flight', req + Math.floor((c[0] - first) / CHUNK), at, at);
    intent(chunk.length).run(iv);
    if (answered.length) result(answered.length / 6).run(answered);
  })();
  commits++;
  answered = [];
  for (const c of chunk) answered.push(1, c[0], req, 'success', `T${c[1]}`, at);
}
if (answered.length) db.transaction(() => result(answered.length / 6).run(answered))();
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
  `${JSON.stringify({ rows, read, commits, ms: Math.round(performance.now() - t0) })}\n`,
);
