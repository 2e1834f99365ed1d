import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { failsThese, ledgerPerTest } from '../helpers/ledger-service.js';
import { clockStoppedAtLongWait, FakeClock, type MainResult, runMain } from '../helpers/main.js';

// Issue 51 item 5: a --json consumer of a million-row run takes the results as a stream:
// `send --json-lines` writes one line a result as the results are read, then a summary line
// (docs/json.md). runMain checks every line against its schema (test/helpers/json-schema.ts).

const fixture = ledgerPerTest();

type Line = Record<string, unknown> & { line: string };

/** The lines of a run's stdout, parsed. */
function linesOf(r: MainResult): Line[] {
  return r.stdout
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Line);
}

/** Six payouts, the fourth refused by the service (failed), in a fresh home. */
async function sixPayouts() {
  const svc = await fixture.start(failsThese(new Set(['P-4'])));
  const home = fixture.home();
  const file = join(home.dir, 'six.csv');
  const rows = Array.from({ length: 6 }, (_, i) => `P-${i + 1},${i + 1}.10,EUR,p${i}@example.com`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return { svc, env: svc.env(home.env), file, dir: home.dir };
}

const ONE_BY_ONE = ['--yes', '--chunk-size', '1', '--concurrency', '1'];

describe('send --json-lines', () => {
  it('one line a result in input order, then the summary: the --json document, a line at a time', async () => {
    const a = await sixPayouts();
    const lines = await runMain(['send', a.file, ...ONE_BY_ONE, '--json-lines'], {
      env: a.env,
      clock: new FakeClock(),
    });
    expect(lines.code, lines.stderr).toBe(4);
    const parsed = linesOf(lines);
    expect(parsed.map((l) => l.line)).toEqual([...Array(6).fill('result'), 'summary']);
    // The same files sent with --json elsewhere: the same results, the same head.
    const b = await sixPayouts();
    const doc = await runMain(['send', b.file, ...ONE_BY_ONE, '--json'], {
      env: b.env,
      clock: new FakeClock(),
    });
    const { results, ...head } = JSON.parse(doc.stdout) as { results: unknown[]; run_id: string };
    const summary = parsed.pop()!;
    expect(parsed.map(({ line: _, ...r }) => r)).toEqual(results);
    const { line: _, ...rest } = summary;
    expect({ ...rest, run_id: head.run_id }).toEqual(head);
    expect(summary).toMatchObject({ exit_code: 4, success_count: 5, failed_count: 1 });
    // stderr is as under --json: the summary, no table.
    expect(lines.stderr).toMatch(/^To send now: /m);
    expect(lines.stderr).not.toMatch(/reference_id\s+status/);
  });

  it('on every exit: refused input, a dry run, with --prepare, stopped', async () => {
    const a = await sixPayouts();
    const bad = join(a.dir, 'bad.csv');
    writeFileSync(bad, 'reference_id,amount,currency,recipient\nB-1,1,234.00,EUR,x\n');
    const refused = await runMain(['send', bad, '--yes', '--json-lines'], { env: a.env });
    expect(refused.code).toBe(2);
    const [problem] = linesOf(refused);
    expect(problem).toMatchObject({ line: 'summary', exit_code: 2, error: { type: 'InputError' } });
    const dry = await runMain(['send', a.file, '--dry-run', '--json-lines'], { env: a.env });
    expect(linesOf(dry)).toEqual([expect.objectContaining({ line: 'summary', dry_run: true })]);
    const prepare = await runMain(['send', a.file, '--prepare', '--json-lines'], { env: a.env });
    expect(prepare.code).toBe(2);
    expect(linesOf(prepare)[0]!.error).toMatchObject({
      message: expect.stringMatching(/--json-lines gives the results of a send/),
    });
    // Stopped while it waits to read a payout in doubt back: every row, then the summary.
    const cut = await fixture.start((n) => (n === 2 ? { apply: 'none', cut: true } : {}));
    const { clock, stop } = clockStoppedAtLongWait();
    const stopped = await runMain(['send', a.file, ...ONE_BY_ONE, '--json-lines'], {
      env: { ...cut.env(fixture.home().env), PAYOUTS_TIMEOUT: '2' },
      clock,
      interrupt: stop.signal,
    });
    expect(stopped.code).toBe(130);
    const out = linesOf(stopped);
    expect(out).toHaveLength(7);
    expect(out[6]).toMatchObject({ line: 'summary', interrupted: true, outcome_unknown: ['P-2'] });
  });
});
