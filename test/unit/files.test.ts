import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import {
  createNewFile,
  nameSource,
  openKeptFile,
  replaceFile,
  trustProblem,
  UnsafeFileError,
  writeTargetProblem,
} from '../../src/files.js';
import { tempHomesPerTest } from '../helpers/cli.js';

const homes = tempHomesPerTest();

/** A fresh folder of this test's. */
function folder(): string {
  return homes().dir;
}

/** A victim: a file of the operator's that a planted link points at. */
function victim(dir: string): string {
  const path = join(dir, 'victim.txt');
  writeFileSync(path, 'the operator keeps this\n', { mode: 0o600 });
  return path;
}

const mkfifo = (path: string) => execFileSync('mkfifo', [path]);
/** Tests that plant another user's files need root to give them away. */
const asRoot = process.getuid?.() === 0;
const OTHER_UID = 65534;

describe('replaceFile', () => {
  it('writes the whole file 0600 and leaves nothing beside it', () => {
    const dir = folder();
    const path = join(dir, 'report.csv');
    replaceFile(path, (append) => {
      append('a,b\r\n');
      append('x'.repeat(1 << 17));
    });
    expect(readFileSync(path, 'utf8')).toBe(`a,b\r\n${'x'.repeat(1 << 17)}`);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['report.csv']);
  });

  it('replaces a regular file by a new one: another name for the old file keeps its text', () => {
    const dir = folder();
    const path = join(dir, 'report.csv');
    writeFileSync(path, 'old', { mode: 0o666 });
    execFileSync('ln', [path, join(dir, 'hardlink')]);
    replaceFile(path, (append) => append('new'));
    expect(readFileSync(path, 'utf8')).toBe('new');
    expect(readFileSync(join(dir, 'hardlink'), 'utf8')).toBe('old');
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('never writes through a link, a FIFO or a device planted at the name, and is not frozen', () => {
    const dir = folder();
    const target = victim(dir);
    const link = join(dir, 'link.csv');
    symlinkSync(target, link);
    const fifo = join(dir, 'fifo.csv');
    mkfifo(fifo);
    for (const path of [link, fifo, join(dir, 'sub')]) {
      if (path.endsWith('sub')) mkdirSync(path);
      expect(() => replaceFile(path, (append) => append('report'))).toThrow();
    }
    expect(readFileSync(target, 'utf8')).toBe('the operator keeps this\n');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(['fifo.csv', 'link.csv', 'sub', 'victim.txt']);
  });

  it('leaves nothing behind when writing fails', () => {
    const dir = folder();
    const path = join(dir, 'report.csv');
    expect(() =>
      replaceFile(path, () => {
        throw new Error('the rows could not be read');
      }),
    ).toThrow('the rows could not be read');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('leaves alone what is planted at the temporary name of an older version (.NAME.PID.tmp)', () => {
    const dir = folder();
    const target = victim(dir);
    const path = join(dir, 'report.csv');
    const old = join(dir, `.report.csv.${process.pid}.tmp`);
    symlinkSync(target, old);
    replaceFile(path, (append) => append('report'));
    expect(readFileSync(path, 'utf8')).toBe('report');
    expect(readFileSync(target, 'utf8')).toBe('the operator keeps this\n');
    expect(lstatSync(old).isSymbolicLink()).toBe(true);
  });

  it('takes another name when a link, a FIFO or a file holds the one it drew', () => {
    const dir = folder();
    const target = victim(dir);
    const draws = ['a', 'b', 'c', 'd'].map((c) => Buffer.alloc(9, c));
    const nameOf = (b: Buffer) => join(dir, `.report.csv.${b.toString('hex')}.tmp`);
    symlinkSync(target, nameOf(draws[0]!));
    mkfifo(nameOf(draws[1]!));
    writeFileSync(nameOf(draws[2]!), 'planted', { mode: 0o666 });
    const planned = [...draws];
    const random = nameSource.bytes;
    nameSource.bytes = (n) => planned.shift() ?? random(n);
    try {
      replaceFile(join(dir, 'report.csv'), (append) => append('report'));
    } finally {
      nameSource.bytes = random;
    }
    expect(planned).toEqual([]);
    expect(readFileSync(join(dir, 'report.csv'), 'utf8')).toBe('report');
    expect(readFileSync(target, 'utf8')).toBe('the operator keeps this\n');
    expect(readFileSync(nameOf(draws[2]!), 'utf8')).toBe('planted');
    expect(lstatSync(nameOf(draws[1]!)).isFIFO()).toBe(true);
    expect(readdirSync(dir)).toHaveLength(5);
  });
});

describe('createNewFile', () => {
  it('refuses any name that exists, without following or blocking on it', () => {
    const dir = folder();
    const target = victim(dir);
    const link = join(dir, 'link');
    symlinkSync(target, link);
    const fifo = join(dir, 'fifo');
    mkfifo(fifo);
    const dangling = join(dir, 'dangling');
    symlinkSync(join(dir, 'not-yet'), dangling);
    for (const path of [link, fifo, target, dangling]) {
      expect(() => createNewFile(path)).toThrow(/EEXIST/);
    }
    expect(readdirSync(dir).sort()).toEqual(['dangling', 'fifo', 'link', 'victim.txt']);
    expect(readFileSync(target, 'utf8')).toBe('the operator keeps this\n');
  });

  it('makes a new file of the mode asked', () => {
    const path = join(folder(), 'new');
    closeSync(createNewFile(path, 0o600));
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });
});

describe('openKeptFile', () => {
  it('creates a missing file and opens an own one', () => {
    const path = join(folder(), 'state.db');
    closeSync(openKeptFile(path));
    closeSync(openKeptFile(path));
    expect(statSync(path).isFile()).toBe(true);
  });

  it('refuses a link or a FIFO at the name, without blocking', () => {
    const dir = folder();
    const target = victim(dir);
    const link = join(dir, 'state.db');
    symlinkSync(target, link);
    expect(() => openKeptFile(link)).toThrow(UnsafeFileError);
    const fifo = join(dir, 'fifo.db');
    mkfifo(fifo);
    expect(() => openKeptFile(fifo)).toThrow(/named pipe/);
    expect(readFileSync(target, 'utf8')).toBe('the operator keeps this\n');
  });

  it.skipIf(!asRoot)("refuses another user's file", () => {
    const path = join(folder(), 'state.db');
    writeFileSync(path, '');
    lchownSync(path, OTHER_UID, OTHER_UID);
    expect(() => openKeptFile(path)).toThrow(/belongs to .*uid 65534.*, not to you/);
  });
});

describe('trustProblem', () => {
  it("trusts the user's own files and root's, not another user's or one others can change", () => {
    const dir = folder();
    const own = join(dir, 'own');
    writeFileSync(own, '');
    const uid = process.getuid!();
    expect(trustProblem(statSync(own), uid)).toBeUndefined();
    expect(trustProblem(Object.assign(statSync(own), { uid: 0 }), 1000)).toBeUndefined();
    expect(trustProblem(Object.assign(statSync(own), { uid: 4242 }), 1000)).toMatch(
      /^belongs to uid 4242, not to you$/,
    );
    chmodSync(own, 0o664);
    expect(trustProblem(statSync(own), uid)).toBe('can be changed by other users (mode 0664)');
    chmodSync(own, 0o644);
    expect(trustProblem(statSync(own), uid)).toBeUndefined();
  });
});

describe('writeTargetProblem', () => {
  const at = (dir: string, path: string) => ({ option: '--report', path, cwd: dir });

  it('allows a new file, or a regular file to replace, in a folder that can be written', () => {
    const dir = folder();
    writeFileSync(join(dir, 'old.csv'), 'x');
    expect(writeTargetProblem(at(dir, 'new.csv'), { folders: [] })).toBeUndefined();
    expect(writeTargetProblem(at(dir, 'old.csv'), { folders: [] })).toBeUndefined();
    expect(readdirSync(dir)).toEqual(['old.csv']);
  });

  it('refuses a folder, a link, a FIFO and a device, naming the option, the path and the fix', () => {
    const dir = folder();
    mkdirSync(join(dir, 'out'));
    symlinkSync(victim(dir), join(dir, 'link.csv'));
    mkfifo(join(dir, 'fifo.csv'));
    const said = (path: string) =>
      writeTargetProblem(at(dir, path), { folders: [] })?.message ?? '';
    expect(said('out')).toBe(`--report out is a folder: name a file in it, such as out/report.csv`);
    expect(said('link.csv')).toMatch(
      /^--report link\.csv is a symbolic link \(to .*victim\.txt\), which payouts never writes through: /,
    );
    expect(said('fifo.csv')).toMatch(/^--report fifo\.csv is a named pipe \(FIFO\), not a file: /);
    expect(said('/dev/null')).toMatch(/^--report \/dev\/null is a character device, not a file/);
    expect(writeTargetProblem(at(dir, 'out'), { folders: [] })).toBeInstanceOf(UsageError);
  });

  it("refuses a file in the tool's own folders, by any path, and the run's inputs", () => {
    const dir = folder();
    const state = join(dir, 'state');
    mkdirSync(state);
    writeFileSync(join(state, 'state.db'), '');
    symlinkSync(state, join(dir, 'alias'));
    for (const path of [join(state, 'state.db'), 'alias/state.db', 'state/new.csv']) {
      expect(writeTargetProblem(at(dir, path), { folders: [state] })?.message).toMatch(
        /is in payouts' own folder .*state, where it keeps its history and settings: name a file elsewhere/,
      );
    }
    writeFileSync(join(dir, 'run.csv'), 'x');
    expect(
      writeTargetProblem(at(dir, 'run.csv'), { folders: [], inputs: [join(dir, 'run.csv')] })
        ?.message,
    ).toBe('--report run.csv is an input file of this run: name another file for it to write');
  });

  it('refuses a missing folder and a name too long, and leaves nothing behind', () => {
    const dir = folder();
    expect(writeTargetProblem(at(dir, 'nope/r.csv'), { folders: [] })?.message).toMatch(
      /^--report nope\/r\.csv is in a folder that does not exist \(.*nope\): create the folder first/,
    );
    expect(writeTargetProblem(at(dir, `${'r'.repeat(300)}.csv`), { folders: [] })?.message).toMatch(
      /is a name too long for the file system: choose a shorter one$/,
    );
    writeFileSync(join(dir, 'file'), '');
    expect(writeTargetProblem(at(dir, 'file/r.csv'), { folders: [] })?.message).toMatch(
      /goes through a file as if it were a folder/,
    );
    expect(readdirSync(dir)).toEqual(['file']);
  });
});
