import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrate, openDatabase, openStateDb } from '../../../src/state/db.js';
import { MIGRATIONS } from '../../../src/state/schema.js';
import { openDb, tempStateDir } from './helpers.js';

describe('state.db', () => {
  it('is WAL, synced on every commit, at the latest schema version', async () => {
    const db = await openDb(await tempStateDir());
    expect(db.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    // 2 is FULL: a commit is on disk when it returns.
    expect(db.prepare('PRAGMA synchronous').get()).toEqual({ synchronous: 2 });
    expect(db.prepare('PRAGMA user_version').get()).toEqual({ user_version: MIGRATIONS.length });
  });

  it('applies the steps a database has not seen, and refuses one of a newer version', async () => {
    const db = openDatabase('');
    migrate(db, 'x.db');
    migrate(db, 'x.db');
    expect(db.prepare('SELECT count(*) AS n FROM runs').get()).toEqual({ n: 0 });
    db.exec(`PRAGMA user_version = ${MIGRATIONS.length + 1}`);
    expect(() => migrate(db, 'x.db')).toThrow(/x\.db was written by a newer version of payouts/);
    const stateDir = await tempStateDir();
    const file = await openStateDb(stateDir);
    file.exec(`PRAGMA user_version = ${MIGRATIONS.length + 1}`);
    file.close();
    await expect(openStateDb(stateDir)).rejects.toThrow(join(stateDir, 'state.db'));
  });

  it('keeps one statement per text for the life of the connection (none is ever freed)', () => {
    const db = openDatabase('');
    expect(db.prepare('SELECT 1')).toBe(db.prepare('SELECT 1'));
  });
});
