/**
 * The one-time import of v1 NDJSON journals (`<stateDir>/journals/<serviceId>/<runId>.ndjson`)
 * into state.db. The files are left in place; a mark in `meta` says the import ran.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { StateDb } from '../db.js';
import { HASH_VERSION_V1 } from '../hash.js';
import { readJournalFile } from './reader.js';
import type { RunRecord } from './records.js';
import { RefTable } from './state.js';

/** The key of the import mark in `meta`. */
export const V1_IMPORT_KEY = 'v1_journals_imported_at';

/** One v1 journal, read whole. */
interface V1Run {
  serviceId: string;
  header: RunRecord;
  table: RefTable;
}

/** Names in a folder; none when it does not exist. */
async function namesIn(dir: string, folders: boolean): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries
      .filter((e) => (folders ? e.isDirectory() : e.isFile()))
      .map((e) => e.name)
      .sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** Every v1 journal with a header, read whole (a damaged one throws JournalCorruptError). */
async function readV1Runs(stateDir: string): Promise<V1Run[]> {
  const root = join(stateDir, 'journals');
  const runs: V1Run[] = [];
  for (const serviceId of await namesIn(root, true)) {
    for (const name of await namesIn(join(root, serviceId), false)) {
      if (!name.endsWith('.ndjson')) continue;
      const table = new RefTable();
      let header: RunRecord | undefined;
      await readJournalFile(join(root, serviceId, name), (rec) => {
        if (rec.t === 'run') header = rec;
        else table.apply(rec);
      });
      if (header) runs.push({ serviceId, header, table });
    }
  }
  return runs;
}

/** Whether the import already ran. */
function imported(db: StateDb): boolean {
  return db.prepare('SELECT 1 FROM meta WHERE key = ?').get(V1_IMPORT_KEY) !== undefined;
}

/** Inserts one v1 run and the state of each reference it names, in order of first appearance. */
function insertRun(db: StateDb, run: V1Run): void {
  const h = run.header;
  if (db.prepare('SELECT 1 FROM runs WHERE run_id = ?').get(h.run_id)) return;
  const id = db
    .prepare(
      `INSERT INTO runs (run_id, service_id, service, client_id, inputs, input_hash, payout_count,
         batch_reference, last_req, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(
      h.run_id,
      run.serviceId,
      h.service,
      h.client_id,
      JSON.stringify(h.inputs),
      h.input_hash,
      h.payout_count,
      h.batch_reference ?? null,
      run.table.lastRequestId,
      h.created_at,
      run.table.lastAt ?? h.created_at,
    ).lastInsertRowid;
  const payout = db.prepare(
    `INSERT INTO payouts (run, row, reference_id, hash, hash_version)
     VALUES (?, ?, ?, ?, ${HASH_VERSION_V1})`,
  );
  const intent = db.prepare(
    `INSERT INTO intents (run, row, state, req, sent_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
  );
  const result = db.prepare(
    `INSERT INTO results (run, row, req, status, transaction_id, charges, message, at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  let row = 0;
  for (const [ref, t] of run.table.entries()) {
    const s = t.state;
    const at = run.table.lastAt ?? h.created_at;
    const hash = s.state === 'in-flight' ? s.hash || (t.hash ?? null) : (t.hash ?? null);
    payout.run(id, row, ref, hash);
    if (s.state === 'confirmed') {
      const charges = s.charges === undefined ? null : String(s.charges);
      const tx = s.transaction_id ?? null;
      result.run(id, row, s.req, s.status, tx, charges, s.message ?? null, at);
    } else if (s.state === 'in-flight') intent.run(id, row, 'in_flight', s.req, s.at, at);
    else intent.run(id, row, 'free', null, null, at);
    row += 1;
  }
}

/**
 * Imports every v1 journal of the state folder once. The journals are read first; the rows
 * and the mark are written in one transaction, which another process may have beaten us to.
 */
export async function importV1Journals(db: StateDb, stateDir: string): Promise<void> {
  if (imported(db)) return;
  const runs = await readV1Runs(stateDir);
  db.transaction(() => {
    if (imported(db)) return;
    for (const run of runs) insertRun(db, run);
    db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)').run(
      V1_IMPORT_KEY,
      new Date().toISOString(),
    );
  }).immediate();
}
