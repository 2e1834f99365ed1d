import { describe, expect, it } from 'vitest';
import { query, queryOne, recycledDatabase, schemaOf, teamRoles } from '../../helpers/pg.js';

// Issue 42, item 6: tests share migrated schemas, emptied between them. A schema is handed out
// again only as migrating made it: without the rows, grants or roles of the test before it.
// The tests run in order, even under --sequence.shuffle: a worker hands out the schema given
// back last.

describe('a migrated schema given back after its test', { shuffle: false }, () => {
  let first = '';
  let roles: string[] = [];
  let changed = '';

  it('is one a test fills and gives two roles', async () => {
    first = await recycledDatabase();
    const { ana, bob } = await teamRoles(first);
    roles = [ana, bob].map((u) => new URL(u).username);
    await query(first, "INSERT INTO meta (key, value) VALUES ('left', 'by the test before')");
    const seen = await queryOne<{ n: number }>(ana, 'SELECT count(*)::int AS n FROM meta');
    expect(seen.n).toBe(1);
  });

  it('is handed out again empty, its roles and their grants gone', async () => {
    const again = await recycledDatabase();
    expect(schemaOf(again)).toBe(schemaOf(first));
    expect((await queryOne<{ n: number }>(again, 'SELECT count(*)::int AS n FROM meta')).n).toBe(0);
    const left = await query(again, 'SELECT rolname FROM pg_roles WHERE rolname = ANY($1)', [
      roles,
    ]);
    expect(left).toEqual([]);
    const acl = await queryOne<{ acl: string | null }>(
      again,
      "SELECT relacl::text AS acl FROM pg_class WHERE oid = 'runs'::regclass",
    );
    expect(acl.acl ?? '').not.toMatch(/ana_|bob_/);
    // A grant of the test's own changes the schema's shape: it must not be handed out again.
    await query(again, 'GRANT SELECT ON runs TO PUBLIC');
    changed = schemaOf(again);
  });

  it('is not handed out again once a test changed more than its rows', async () => {
    const next = await recycledDatabase();
    expect(schemaOf(next)).not.toBe(changed);
    const acl = await queryOne<{ acl: string | null }>(
      next,
      "SELECT relacl::text AS acl FROM pg_class WHERE oid = 'runs'::regclass",
    );
    expect(acl.acl ?? '').not.toMatch(/=r\//);
  });
});
