import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { permissionWarnings } from '../../../src/config/store.js';
import { configDir, type Host, stateDir } from '../../../src/paths.js';

/** A host of `platform` whose operating system says the home folder is `home`. */
function host(platform: NodeJS.Platform, home: string): Host {
  return { platform, homedir: () => home };
}

describe('folders on Linux', () => {
  const linux = host('linux', '/home/os-answer');

  it('uses absolute XDG folders, else ~/.config and ~/.local/state under HOME', () => {
    const env = { HOME: '/home/ana', XDG_CONFIG_HOME: '/xdg/config', XDG_STATE_HOME: '/xdg/state' };
    expect(configDir(env, linux)).toBe('/xdg/config/payouts');
    expect(stateDir(env, linux)).toBe('/xdg/state/payouts');
    expect(configDir({ HOME: '/home/ana' }, linux)).toBe('/home/ana/.config/payouts');
    expect(stateDir({ HOME: '/home/ana' }, linux)).toBe('/home/ana/.local/state/payouts');
  });

  it('ignores a relative XDG value, as the XDG spec says', () => {
    const env = { HOME: '/home/ana', XDG_CONFIG_HOME: 'config', XDG_STATE_HOME: './state' };
    expect(configDir(env, linux)).toBe('/home/ana/.config/payouts');
    expect(stateDir(env, linux)).toBe('/home/ana/.local/state/payouts');
  });

  it('asks the operating system without HOME, and ignores USERPROFILE', () => {
    expect(stateDir({ USERPROFILE: '/other' }, linux)).toBe('/home/os-answer/.local/state/payouts');
  });
});

describe('folders on macOS', () => {
  it('uses the XDG layout under the home folder, as a command-line tool', () => {
    const mac = host('darwin', '/Users/ana');
    expect(configDir({ HOME: '/Users/ana' }, mac)).toBe('/Users/ana/.config/payouts');
    expect(stateDir({ HOME: '/Users/ana' }, mac)).toBe('/Users/ana/.local/state/payouts');
    expect(stateDir({ HOME: '/Users/ana', XDG_STATE_HOME: '/Volumes/x' }, mac)).toBe(
      '/Volumes/x/payouts',
    );
  });
});

describe('folders on Windows', () => {
  const windows = host('win32', 'C:\\Users\\os-answer');

  it('keeps config in %APPDATA% and state in %LOCALAPPDATA%', () => {
    const env = {
      APPDATA: 'C:\\Users\\ana\\AppData\\Roaming',
      LOCALAPPDATA: 'C:\\Users\\ana\\AppData\\Local',
      USERPROFILE: 'C:\\Users\\ana',
    };
    expect(configDir(env, windows)).toBe('C:\\Users\\ana\\AppData\\Roaming\\payouts');
    expect(stateDir(env, windows)).toBe('C:\\Users\\ana\\AppData\\Local\\payouts');
  });

  it('finds one history whatever HOME and XDG_* a shell sets', () => {
    const cmd = { USERPROFILE: 'C:\\Users\\ana', LOCALAPPDATA: 'C:\\Users\\ana\\AppData\\Local' };
    const gitBash = { ...cmd, HOME: '/home/ana', XDG_STATE_HOME: '/home/ana/.local/state' };
    expect(stateDir(gitBash, windows)).toBe(stateDir(cmd, windows));
    expect(configDir(gitBash, windows)).toBe(configDir(cmd, windows));
  });

  it('falls back to the profile folder (USERPROFILE, else the OS) without the variables', () => {
    expect(stateDir({ USERPROFILE: 'D:\\ana', HOME: 'E:\\home' }, windows)).toBe(
      'D:\\ana\\AppData\\Local\\payouts',
    );
    expect(configDir({ APPDATA: 'relative\\roaming' }, windows)).toBe(
      'C:\\Users\\os-answer\\AppData\\Roaming\\payouts',
    );
  });
});

describe('config permission warnings', () => {
  it('warns about an open file on Unix, and never on Windows, where chmod means nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'payouts-perm-'));
    const folder = join(dir, 'payouts');
    mkdirSync(folder, { mode: 0o755 });
    chmodSync(folder, 0o755);
    const file = join(folder, 'config.json');
    writeFileSync(file, '{}', { mode: 0o644 });
    chmodSync(file, 0o644);
    expect(permissionWarnings(folder, file, 'linux')).toHaveLength(2);
    expect(permissionWarnings(folder, file, 'win32')).toEqual([]);
  });
});
