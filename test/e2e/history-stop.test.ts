import { readFileSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempHomesPerTest } from '../helpers/cli.js';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { onTerminal, storeProfile } from '../helpers/terminal.js';

// Issue 52, item 6 (and 4): the process itself under test, on a pseudo-terminal as a person
// runs it: a command waiting on a shared history that never answers stops at the first Ctrl-C,
// and `config set state_url` asks for the password rather than taking it on its command line.

const homes = tempHomesPerTest();
const fixture = ledgerPerTest();

const servers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of servers.splice(0)) await close();
});

/** A port that accepts connections and says nothing; `marker` is made when one arrives. */
async function silentEndpoint(marker: string): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    writeFileSync(marker, '');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });
  return (server.address() as AddressInfo).port;
}

describe('a shared history that never answers, on a terminal', () => {
  it('Ctrl-C stops payouts runs at once: exit 130, not the connect timeout 10 s later', async () => {
    const home = homes();
    const svc = await fixture.start();
    await storeProfile(home.env, svc.url);
    const marker = join(home.dir, 'connected');
    const port = await silentEndpoint(marker);
    const env = { ...home.env, PAYOUTS_STATE_URL: `postgres://u@127.0.0.1:${port}/db` };
    const screen = await onTerminal(['runs'], [{ wait_file: marker }, { send: '\u0003' }], env);
    expect(screen.steps).toBe(2);
    expect(screen.code).toBe(130);
    expect(screen.output).toContain('error: interrupted');
    expect(screen.output).not.toMatch(/did not answer within/);
  });
});

describe('config set state_url on a terminal', () => {
  it('asks for the password without showing it, and keeps it in the config file', async () => {
    const home = homes();
    const url = 'postgres://ana@db.example.com/payouts?sslmode=verify-full';
    const typed = 'pa55-typed-canary';
    const screen = await onTerminal(
      ['config', 'set', 'state_url', url],
      [{ expect: 'Password for' }, { send: `${typed}\r` }],
      home.env,
    );
    expect(screen.code).toBe(0);
    expect(screen.output).toContain(`Password for ${url} (not shown;`);
    expect(screen.output).toContain('Set state_url to postgres://ana:***@db.example.com/payouts');
    expect(screen.output).not.toContain(typed);
    const config = readFileSync(join(home.env.XDG_CONFIG_HOME!, 'payouts', 'config.json'), 'utf8');
    expect(config).toContain(`ana:${typed}@db.example.com`);
  });
});
