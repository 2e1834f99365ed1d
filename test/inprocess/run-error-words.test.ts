import { expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { writeRun } from '../helpers/sandbox.js';

// Issue 41: the error that stops a run speaks of the whole run, not of its last request.

const fixture = ledgerPerTest();

it('a service gone mid-send: no line says "nothing was sent" once payouts were sent', async () => {
  const home = fixture.home();
  // The service stops listening once it has answered its third request.
  const svc = await fixture.start((n, _posted, s) => {
    if (n === 3) setImmediate(() => void s.close());
    return {};
  });
  const { file } = writeRun(home.dir, 20);
  const args = ['send', file, '--yes', '--json', '--chunk-size', '2', '--concurrency', '1'];
  const r = await runMain(args, { env: svc.env(home.env), clock: new FakeClock() });
  expect(r.code).toBe(7);
  const doc = JSON.parse(r.stdout) as { error: { message: string }; success_count: number };
  expect(doc.success_count).toBe(6);
  const told =
    /^could not reach 127\.0\.0\.1:\d+ \(connection refused\); 6 of 20 payouts sent, 14 not sent$/;
  expect(doc.error.message).toMatch(told);
  const lastLine = r.stderr
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('error: '))
    .at(-1);
  expect(lastLine?.slice('error: '.length)).toMatch(told);
  expect(r.stderr).not.toContain('nothing was sent');
  expect(svc.appliedTwice()).toEqual([]);
});
