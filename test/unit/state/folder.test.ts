import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  lchownSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/errors.js';
import { checkStateFolder } from '../../../src/state/folder.js';
import { tempHomesPerTest } from '../../helpers/cli.js';

// Issue 52, item 3: the state folder, state.db and what payouts keeps beside it are trusted
// only when no one else can change them; the tests plant what another user could.

const homes = tempHomesPerTest();

/** A state folder (0700) holding a state.db, and a victim file outside it. */
function stateFolder(): { dir: string; db: string; victim: string } {
  const base = homes().dir;
  const dir = join(base, 'state', 'payouts');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const db = join(dir, 'state.db');
  writeFileSync(db, '', { mode: 0o600 });
  const victim = join(base, 'victim.txt');
  writeFileSync(victim, 'the operator keeps this\n', { mode: 0o600 });
  return { dir, db, victim };
}

/** What checkStateFolder threw, or undefined. */
function refusal(dir: string): UsageError | undefined {
  try {
    checkStateFolder(dir);
    return undefined;
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError);
    return e as UsageError;
  }
}

const asRoot = process.getuid?.() === 0;
const OTHER = 65534;

describe('checkStateFolder', () => {
  it('accepts a folder not made yet, and an own 0700 folder with its files', () => {
    const { dir } = stateFolder();
    mkdirSync(join(dir, 'locks'), { mode: 0o700 });
    writeFileSync(join(dir, 'locks', 'send-1.lock'), '{}', { mode: 0o600 });
    // The sends waiting for that lock (--wait) queue as files in a folder beside it.
    mkdirSync(join(dir, 'locks', 'send-1.lock.queue'), { mode: 0o700 });
    writeFileSync(join(dir, 'locks', 'send-1.lock.queue', '1-a.waiter'), '{}', { mode: 0o600 });
    expect(refusal(join(dir, 'not-yet'))).toBeUndefined();
    expect(refusal(dir)).toBeUndefined();
  });

  it('refuses a folder others can change, and leaves its mode to the person', () => {
    const { dir } = stateFolder();
    chmodSync(dir, 0o777);
    expect(refusal(dir)?.message).toBe(
      `the state folder ${dir} can be changed by other users (mode 0777): payouts keeps its history only where no one else can change it: run \`chmod 700 ${dir}\`, check that everything in it is yours (ls -la ${dir}), then run again`,
    );
    expect(statSync(dir).mode & 0o777).toBe(0o777);
  });

  it('refuses a state.db that is a link, a FIFO, or open to changes; the victim is untouched', () => {
    const { dir, db, victim } = stateFolder();
    rmSync(db);
    symlinkSync(victim, db);
    expect(refusal(dir)?.message).toMatch(
      new RegExp(
        `^${db}, in payouts' state folder, is a symbolic link \\(to .*victim\\.txt\\): payouts uses only files of its own there, never through a link: .*move it aside \\(mv ${db} ${db}\\.suspect\\)`,
      ),
    );
    rmSync(db);
    execFileSync('mkfifo', [db]);
    expect(refusal(dir)?.message).toMatch(/state\.db, in payouts' state folder, is a named pipe/);
    rmSync(db);
    writeFileSync(db, '', { mode: 0o666 });
    chmodSync(db, 0o666);
    expect(refusal(dir)?.message).toMatch(/can be changed by other users \(mode 0666\)/);
    symlinkSync(victim, join(dir, 'state.db-wal'));
    rmSync(db);
    expect(refusal(dir)?.message).toMatch(
      /state\.db-wal, in payouts' state folder, is a symbolic link/,
    );
    expect(readFileSync(victim, 'utf8')).toBe('the operator keeps this\n');
  });

  it('refuses a link or a FIFO planted among the locks, their queues or temporary files', () => {
    const { dir, victim } = stateFolder();
    mkdirSync(join(dir, 'locks'), { mode: 0o700 });
    execFileSync('mkfifo', [join(dir, 'locks', 'send-0123.lock')]);
    expect(refusal(dir)?.message).toMatch(
      /locks\/send-0123\.lock, in payouts' state folder, is a named pipe/,
    );
    rmSync(join(dir, 'locks', 'send-0123.lock'));
    // A lock's queue: a folder of files, neither a link nor holding one.
    const queue = join(dir, 'locks', 'send-0123.lock.queue');
    symlinkSync(dir, queue);
    expect(refusal(dir)?.message).toMatch(/send-0123\.lock\.queue, .* is a symbolic link/);
    rmSync(queue);
    mkdirSync(queue, { mode: 0o700 });
    symlinkSync(victim, join(queue, '1-a.waiter'));
    expect(refusal(dir)?.message).toMatch(
      /send-0123\.lock\.queue\/1-a\.waiter, .* is a symbolic link/,
    );
    // Any other folder among the locks is not payouts'.
    rmSync(join(dir, 'locks'), { recursive: true });
    mkdirSync(join(dir, 'locks', 'send-0123.lock'), { recursive: true, mode: 0o700 });
    expect(refusal(dir)?.message).toMatch(/send-0123\.lock, in payouts' state folder, is a folder/);
    rmSync(join(dir, 'locks'), { recursive: true });
    mkdirSync(join(dir, 'tmp'), { mode: 0o700 });
    symlinkSync(victim, join(dir, 'tmp', 'approved-p1-1.csv'));
    expect(refusal(dir)?.message).toMatch(
      /tmp\/approved-p1-1\.csv, in payouts' state folder, is a symbolic link/,
    );
  });

  it.skipIf(!asRoot)("refuses another user's folder or state.db, saying whose", () => {
    const { dir, db } = stateFolder();
    chownSync(db, OTHER, OTHER);
    expect(refusal(dir)?.message).toMatch(
      /state\.db, in payouts' state folder, belongs to (nobody \()?uid 65534\)?, not to you/,
    );
    chownSync(db, 0, 0);
    symlinkSync(db, join(dir, 'state.db-shm'));
    lchownSync(join(dir, 'state.db-shm'), OTHER, OTHER);
    expect(refusal(dir)?.message).toMatch(
      /state\.db-shm, in payouts' state folder, is a symbolic link/,
    );
    rmSync(join(dir, 'state.db-shm'));
    chownSync(dir, OTHER, OTHER);
    expect(refusal(dir)?.message).toMatch(
      /^the state folder .* belongs to (nobody \()?uid 65534\)?, not to you: .*move it aside \(mv .*\.not-mine\) or set XDG_STATE_HOME to a folder of yours/,
    );
  });
});
