import { describe, expect, it } from 'vitest';
import { connectTimeoutOf, connectTo, HISTORY_TIMEOUTS } from '../../../src/state/pg/failure.js';
import { freshDatabase } from '../../helpers/pg.js';

// Issue 52, item 6: every connection to a shared history and every statement on it has a
// timeout, so no command waits on the database for ever.

describe('the timeouts of a shared history', () => {
  it('connects within 10 s unless the URL says (connect_timeout, 2 s at least)', () => {
    expect(HISTORY_TIMEOUTS.connectMs).toBe(10_000);
    expect(connectTimeoutOf('postgres://u@h.invalid/db?sslmode=disable')).toBe(10_000);
    expect(connectTimeoutOf('postgres://u@h.invalid/db?connect_timeout=5')).toBe(5_000);
    expect(connectTimeoutOf('postgres://u@h.invalid/db?connect_timeout=1')).toBe(2_000);
    // libpq's 0 (wait for ever) is not taken.
    expect(connectTimeoutOf('postgres://u@h.invalid/db?connect_timeout=0')).toBe(10_000);
  });

  it('gives each session a statement and an idle-in-transaction timeout the server enforces', async () => {
    const client = await connectTo(await freshDatabase());
    try {
      const show = async (name: string) =>
        Object.values((await client.query(`SHOW ${name}`)).rows[0] as object)[0];
      expect(await show('statement_timeout')).toBe('1min');
      expect(await show('idle_in_transaction_session_timeout')).toBe('1min');
      await expect(client.query('SELECT pg_sleep(0.2)', [])).resolves.toBeDefined();
    } finally {
      await client.end();
    }
  });

  it('says so when a statement runs past its timeout', async () => {
    const url = await freshDatabase();
    const client = await connectTo(`${url}&statement_timeout=100`);
    try {
      await expect(client.query('SELECT pg_sleep(2)')).rejects.toThrow(/statement timeout/);
    } finally {
      await client.end();
    }
  });
});
