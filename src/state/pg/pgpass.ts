/**
 * The password file of libpq (`~/.pgpass`, or PGPASSFILE), read as libpq reads it, so a shared
 * history's password need never be on a command line. node-postgres 8 reads it too, but that
 * is deprecated (pg 9 drops it) and prints a warning when used; this reader takes the
 * environment it is given, as every core function does.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Env } from '../../paths.js';

/** What a line of the file is matched against: the connection's host, port, database and user. */
export interface PgpassKey {
  host: string;
  port: string;
  database: string;
  user: string;
}

/** A line's first four fields and its password: `:` separates, `\` escapes the next character. */
function fieldsOf(line: string): string[] {
  const fields: string[] = [];
  let field = '';
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (ch === '\\' && i + 1 < line.length) {
      i += 1;
      field += line[i];
    } else if (ch === ':' && fields.length < 4) {
      fields.push(field);
      field = '';
    } else {
      field += ch;
    }
  }
  fields.push(field);
  return fields;
}

/** The password of the first line that matches `key` (`*` matches anything); undefined when none. */
export function pgpassLookup(text: string, key: PgpassKey): string | undefined {
  const wanted = [key.host, key.port, key.database, key.user];
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const fields = fieldsOf(line);
    if (fields.length < 5) continue;
    if (wanted.every((value, i) => fields[i] === '*' || fields[i] === value)) return fields[4];
  }
  return undefined;
}

/** What a URL connects to, as the file's lines name it; undefined for a URL that does not parse. */
export function pgpassKeyOf(url: string, env: Env): PgpassKey | undefined {
  let u: URL;
  try {
    u = new URL(url.trim().replace('@/', '@localhost/'));
  } catch {
    return undefined;
  }
  const user = decodeURIComponent(u.username) || env.PGUSER || env.USER || env.LOGNAME || '';
  const host = u.searchParams.get('host') ?? decodeURIComponent(u.hostname).replace(/^\[|\]$/g, '');
  return {
    host: host || 'localhost',
    port: u.port || '5432',
    database: decodeURIComponent(u.pathname.replace(/^\//, '')) || user,
    user,
  };
}

/** Where the password file is: PGPASSFILE, else ~/.pgpass (%APPDATA%\postgresql\pgpass.conf on Windows). */
export function pgpassPath(
  env: Env,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  if (env.PGPASSFILE) return env.PGPASSFILE;
  if (platform === 'win32') return env.APPDATA && join(env.APPDATA, 'postgresql', 'pgpass.conf');
  return env.HOME && join(env.HOME, '.pgpass');
}

/**
 * The password the password file holds for a state URL, and a warning when the file is
 * ignored, as libpq ignores one that others can read (its mode must be 0600 or less).
 */
export function pgpassPassword(url: string, env: Env): { password?: string; warning?: string } {
  const path = pgpassPath(env);
  const key = pgpassKeyOf(url, env);
  if (path === undefined || key === undefined) return {};
  let text: string;
  try {
    if (process.platform !== 'win32' && (statSync(path).mode & 0o077) !== 0) {
      return {
        warning: `the password file ${path} is not used: others can read it (libpq ignores it too): run \`chmod 600 ${path}\``,
      };
    }
    text = readFileSync(path, 'utf8');
  } catch {
    return {};
  }
  return { password: pgpassLookup(text, key) };
}
