import { appendFile, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  JournalCorruptError,
  RunJournal,
  runIdFor,
  serviceId,
} from '../../../src/journal/index.js';
import { fakeClock, header, openRun, SERVICE, tempStateDir, track } from './helpers.js';

/** The journal's lines, parsed. */
async function lines(path: string): Promise<Array<Record<string, unknown>>> {
  const text = await readFile(path, 'utf8');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('RunJournal: create and load', () => {
  it('creates the journal under journals/<serviceId>/<runId>.ndjson with a durable header', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir, 'h1', { count: 7 });
    const runId = runIdFor(SERVICE, 'h1');
    expect(j.runId).toBe(runId);
    expect(j.path).toBe(join(stateDir, 'journals', serviceId(SERVICE), `${runId}.ndjson`));
    expect(j.resumed).toBe(false);
    expect(j.lastRequestId).toBe(0);
    // The header is on disk before open resolves.
    const [head, ...rest] = await lines(j.path);
    expect(rest).toEqual([]);
    expect(head).toEqual({
      t: 'run',
      v: 1,
      run_id: runId,
      service: 'https://pay.example.com',
      client_id: 'abc-client-id',
      inputs: ['payouts.csv'],
      input_hash: 'h1',
      created_at: '2026-01-02T03:04:05.000Z',
      payout_count: 7,
    });
    await j.close();
  });

  it('keeps the batch reference in the header when given', async () => {
    const stateDir = await tempStateDir();
    const j = await track(
      RunJournal.open({
        stateDir,
        serviceKey: 'sandbox',
        runId: runIdFor('sandbox', 'h'),
        header: { ...header('h'), batch_reference: 'B-7' },
      }),
    );
    const [head] = await lines(j.path);
    expect(head?.batch_reference).toBe('B-7');
    await j.close();
  });

  it('makes folders 0700 and the journal 0600', async () => {
    if (process.platform === 'win32') return;
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.close();
    expect((await stat(j.path)).mode & 0o777).toBe(0o600);
    expect((await stat(dirname(j.path))).mode & 0o777).toBe(0o700);
    expect((await stat(join(stateDir, 'journals'))).mode & 0o777).toBe(0o700);
  });

  it('resumes an existing journal with its states and last request id', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.recordIntent(1, [
      { ref: 'A', hash: 'ha' },
      { ref: 'B', hash: 'hb' },
    ]);
    await j.recordIntent(2, [{ ref: 'C', hash: 'hc' }]);
    j.recordOutcome(1, [
      {
        ref: 'A',
        status: 'success',
        transaction_id: 'T1',
        charges: 0.25,
        amount: 10.5,
        currency: 'USD',
      },
      { ref: 'B', status: 'failed', message: 'recipient unknown' },
    ]);
    await j.close();

    const again = await openRun(stateDir);
    expect(again.resumed).toBe(true);
    expect(again.path).toBe(j.path);
    expect(again.lastRequestId).toBe(2);
    expect(again.stateOf('A')).toEqual({
      state: 'confirmed',
      status: 'success',
      transaction_id: 'T1',
      charges: 0.25,
      amount: 10.5,
      currency: 'USD',
      req: 1,
    });
    expect(again.stateOf('B')).toEqual({
      state: 'confirmed',
      status: 'failed',
      message: 'recipient unknown',
      req: 1,
    });
    expect(again.stateOf('C')).toEqual({ state: 'in-flight', req: 2, hash: 'hc', at: expect.any(String) });
    expect(again.stateOf('D')).toBeUndefined();
    expect(again.inFlight()).toEqual([{ ref: 'C', req: 2, hash: 'hc' }]);
    // A reused request id would make not_applied records ambiguous.
    await expect(again.recordIntent(2, [{ ref: 'D', hash: 'hd' }])).rejects.toThrow(/already used/);
    await again.recordIntent(3, [{ ref: 'D', hash: 'hd' }]);
    await again.close();
    const header = (await lines(j.path)).filter((r) => r.t === 'run');
    expect(header).toHaveLength(1);
  });

  it('refuses a journal whose header names another run', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir, 'h1');
    await j.close();
    const other = await readFile(j.path, 'utf8');
    await writeFile(j.path, other.replace(/"run_id":"[0-9a-f]+"/, '"run_id":"0000000000000000"'));
    await expect(openRun(stateDir, 'h1')).rejects.toThrow(/belongs to run 0000000000000000/);
  });

  it('rejects a run id that could escape the folder', async () => {
    const stateDir = await tempStateDir();
    await expect(
      RunJournal.open({ stateDir, serviceKey: 'sandbox', runId: '../x', header: header() }),
    ).rejects.toThrow(/invalid run id/);
  });

  it('refuses records after close, and close is idempotent', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.close();
    await j.close();
    expect(() => j.recordOutcome(1, [{ ref: 'A', status: 'success' }])).toThrow(/closed/);
    await expect(j.recordIntent(1, [{ ref: 'A', hash: 'h' }])).rejects.toThrow(/closed/);
  });

  it('writes every record type in the documented shape', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir, 'h', { now: fakeClock(Date.UTC(2026, 4, 1)) });
    await j.recordIntent(1, [{ ref: 'A', hash: 'ha' }]);
    j.recordOutcome(1, [{ ref: 'A', status: 'pending' }]);
    j.recordNotApplied(2, ['B'], 'rate limited (429)');
    j.recordUnknown(['C'], 'timeout');
    await j.flush();
    const [, intent, outcome, notApplied, unknown] = await lines(j.path);
    expect(intent).toEqual({
      t: 'intent',
      req: 1,
      at: '2026-05-01T00:00:01.000Z',
      p: [['A', 'ha']],
    });
    expect(outcome).toEqual({
      t: 'outcome',
      req: 1,
      at: '2026-05-01T00:00:02.000Z',
      r: [['A', 'pending', null, null, null, null, null]],
    });
    expect(notApplied).toEqual({
      t: 'not_applied',
      req: 2,
      at: '2026-05-01T00:00:03.000Z',
      refs: ['B'],
      why: 'rate limited (429)',
    });
    expect(unknown).toEqual({
      t: 'unknown',
      at: '2026-05-01T00:00:04.000Z',
      refs: ['C'],
      why: 'timeout',
    });
    await j.close();
  });

  it('buffers outcomes until the next intent, flush or close', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.recordIntent(1, [{ ref: 'A', hash: 'ha' }]);
    j.recordOutcome(1, [{ ref: 'A', status: 'success' }]);
    expect((await lines(j.path)).map((r) => r.t)).toEqual(['run', 'intent']);
    // In memory the state is current at once.
    expect(j.stateOf('A')).toMatchObject({ state: 'confirmed', status: 'success' });
    await j.recordIntent(2, [{ ref: 'B', hash: 'hb' }]);
    expect((await lines(j.path)).map((r) => r.t)).toEqual(['run', 'intent', 'outcome', 'intent']);
    j.recordNotApplied(2, ['B'], '429');
    await j.close();
    expect((await lines(j.path)).map((r) => r.t)).toEqual([
      'run',
      'intent',
      'outcome',
      'intent',
      'not_applied',
    ]);
  });

  it('never writes a line its reader would reject, whatever the service answered', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.recordIntent(1, [{ ref: 'A', hash: 'ha' }]);
    // A service may send a numeric transaction id, a string amount or no status at all.
    const odd = { ref: 'A', status: 'success', transaction_id: 42, amount: '10.5' };
    j.recordOutcome(1, [odd as unknown as { ref: string; status: string }]);
    j.recordOutcome(1, [{ ref: 'B' } as unknown as { ref: string; status: string }]);
    expect(() => j.recordNotApplied(1, [7 as unknown as string], 'x')).toThrow(
      /invalid journal record/,
    );
    await expect(
      j.recordIntent(2, [{ ref: 'C', hash: undefined as unknown as string }]),
    ).rejects.toThrow(/invalid journal record/);
    await expect(j.recordIntent(Number.NaN, [{ ref: 'C', hash: 'h' }])).rejects.toThrow(/invalid/);
    const again = await reopen(j);
    expect(again.stateOf('A')).toEqual({
      state: 'confirmed',
      status: 'success',
      transaction_id: '42',
      req: 1,
    });
    // No status: the service saw it, but its fate is not known.
    expect(again.stateOf('B')).toEqual({ state: 'in-flight', req: 1, hash: '', at: expect.any(String) });
    expect(again.stateOf('C')).toBeUndefined();
    // The rejected intent did not use up its request id.
    await again.recordIntent(2, [{ ref: 'C', hash: 'hc' }]);
  });

  it('turns a failed write into a failure of every later durable call', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    // Close the file under the journal: the next write fails as a full disk would.
    await (j as unknown as { fh: { close(): Promise<void> } }).fh.close();
    await expect(j.recordIntent(1, [{ ref: 'A', hash: 'ha' }])).rejects.toThrow();
    // Nothing may be appended after a possibly partial line.
    await expect(j.recordIntent(2, [{ ref: 'B', hash: 'hb' }])).rejects.toThrow();
    await expect(j.flush()).rejects.toThrow();
    // The refs stay in flight: the run must not believe they are free.
    expect(j.stateOf('A')).toMatchObject({ state: 'in-flight', req: 1 });
  });
});

describe('RunJournal: state derivation', () => {
  it('follows intent -> outcome, intent -> not_applied, and unknown', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.recordIntent(1, [
      { ref: 'A', hash: 'ha' },
      { ref: 'B', hash: 'hb' },
      { ref: 'C', hash: 'hc' },
    ]);
    j.recordOutcome(1, [{ ref: 'A', status: 'success', transaction_id: 'T' }]);
    j.recordNotApplied(1, ['B'], 'connection refused');
    j.recordUnknown(['C'], 'timeout');
    for (const journal of [j, await reopen(j)]) {
      expect(journal.stateOf('A')).toEqual({
        state: 'confirmed',
        status: 'success',
        transaction_id: 'T',
        req: 1,
      });
      expect(journal.stateOf('B')).toEqual({ state: 'free' });
      expect(journal.stateOf('C')).toEqual({ state: 'in-flight', req: 1, hash: 'hc', at: expect.any(String) });
      expect(journal.inFlight().map((x) => x.ref)).toEqual(['C']);
    }
  });

  it('lets a resent ref be in flight again, and its later outcome win', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.recordIntent(1, [{ ref: 'A', hash: 'ha' }]);
    j.recordNotApplied(1, ['A'], '429');
    await j.recordIntent(2, [{ ref: 'A', hash: 'ha' }]);
    expect(j.stateOf('A')).toEqual({ state: 'in-flight', req: 2, hash: 'ha', at: expect.any(String) });
    j.recordOutcome(2, [{ ref: 'A', status: 'failed' }]);
    const again = await reopen(j);
    expect(again.stateOf('A')).toEqual({ state: 'confirmed', status: 'failed', req: 2 });
    expect(again.lastRequestId).toBe(2);
  });

  it('does not free a ref with the not_applied of an older request', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.recordIntent(1, [{ ref: 'A', hash: 'ha' }]);
    await j.recordIntent(2, [{ ref: 'A', hash: 'ha' }]);
    j.recordNotApplied(1, ['A'], 'late news about request 1');
    expect(j.stateOf('A')).toEqual({ state: 'in-flight', req: 2, hash: 'ha', at: expect.any(String) });
    expect((await reopen(j)).stateOf('A')).toEqual({ state: 'in-flight', req: 2, hash: 'ha', at: expect.any(String) });
  });

  it('frees an in-flight ref with a read-back not_applied (req -1)', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.recordIntent(4, [{ ref: 'A', hash: 'ha' }]);
    j.recordUnknown(['A'], 'timeout');
    j.recordNotApplied(-1, ['A'], 'not found when read back');
    expect(j.stateOf('A')).toEqual({ state: 'free' });
    expect((await reopen(j)).stateOf('A')).toEqual({ state: 'free' });
  });

  it('confirms by read-back outcome (req -1) and never downgrades a confirmed ref', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.recordIntent(1, [{ ref: 'A', hash: 'ha' }]);
    j.recordOutcome(-1, [{ ref: 'A', status: 'success' }]);
    j.recordNotApplied(1, ['A'], 'confused caller');
    j.recordNotApplied(-1, ['A'], 'confused caller');
    j.recordUnknown(['A'], 'confused caller');
    for (const journal of [j, await reopen(j)]) {
      expect(journal.stateOf('A')).toEqual({ state: 'confirmed', status: 'success', req: -1 });
      expect(journal.lastRequestId).toBe(1);
    }
  });

  it('keeps an unknown ref in flight even without an intent in this journal', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    j.recordNotApplied(-1, ['B'], 'not found');
    j.recordUnknown(['A', 'B'], 'could not be read back');
    expect(j.stateOf('A')).toEqual({ state: 'in-flight', req: -1, hash: '', at: expect.any(String) });
    expect(j.stateOf('B')).toEqual({ state: 'in-flight', req: -1, hash: '', at: expect.any(String) });
    await j.close();
  });
});

describe('RunJournal: crash damage', () => {
  it('ignores a torn last line, truncates it, and appends cleanly after', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.recordIntent(1, [{ ref: 'A', hash: 'ha' }]);
    await j.close();
    const intact = await readFile(j.path, 'utf8');
    await appendFile(j.path, '{"t":"intent","req":2,"at":"2026-01-0');

    const again = await openRun(stateDir);
    expect(again.resumed).toBe(true);
    expect(again.stateOf('A')).toMatchObject({ state: 'in-flight', req: 1 });
    expect(again.lastRequestId).toBe(1);
    // Truncated at open, before anything new is appended.
    expect(await readFile(j.path, 'utf8')).toBe(intact);
    await again.recordIntent(2, [{ ref: 'B', hash: 'hb' }]);
    await again.close();
    const third = await openRun(stateDir);
    expect(third.stateOf('B')).toEqual({ state: 'in-flight', req: 2, hash: 'hb', at: expect.any(String) });
    expect((await lines(j.path)).map((r) => r.t)).toEqual(['run', 'intent', 'intent']);
    await third.close();
  });

  it('treats a final line of zero bytes (a crash on some filesystems) as torn', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.recordIntent(1, [{ ref: 'A', hash: 'ha' }]);
    await j.close();
    const size = (await stat(j.path)).size;
    await appendFile(j.path, Buffer.alloc(300));
    const again = await openRun(stateDir);
    expect(again.stateOf('A')).toMatchObject({ state: 'in-flight' });
    expect((await stat(j.path)).size).toBe(size);
    await again.close();
  });

  it('keeps a complete last record whose newline was lost, and adds the newline', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.recordIntent(1, [{ ref: 'A', hash: 'ha' }]);
    await j.close();
    await appendFile(
      j.path,
      '{"t":"outcome","req":1,"at":"2026-01-02T03:04:09.000Z","r":[["A","success",null,null,null,null,null]]}',
    );
    const again = await openRun(stateDir);
    expect(again.stateOf('A')).toMatchObject({ state: 'confirmed', status: 'success' });
    await again.recordIntent(2, [{ ref: 'B', hash: 'hb' }]);
    await again.close();
    expect((await lines(j.path)).map((r) => r.t)).toEqual(['run', 'intent', 'outcome', 'intent']);
  });

  it('rewrites the header of a journal that a crash left empty', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir, 'h');
    await j.close();
    await writeFile(j.path, '{"t":"run","v":1,"ru');
    const again = await openRun(stateDir, 'h');
    expect(again.resumed).toBe(false);
    await again.close();
    const all = await lines(j.path);
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({ t: 'run', run_id: again.runId });
  });

  it('refuses a journal with an unparsable line in the middle, naming file and line', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.recordIntent(1, [{ ref: 'A', hash: 'ha' }]);
    await j.recordIntent(2, [{ ref: 'B', hash: 'hb' }]);
    await j.close();
    const text = await readFile(j.path, 'utf8');
    const parts = text.split('\n');
    parts[1] = '{"t":"intent","req":1,"at":'; // line 2 damaged
    await writeFile(j.path, parts.join('\n'));
    const err = await openRun(stateDir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JournalCorruptError);
    expect((err as JournalCorruptError).file).toBe(j.path);
    expect((err as JournalCorruptError).line).toBe(2);
    expect((err as Error).message).toContain(`${j.path} line 2`);
    // Nothing was truncated or appended.
    expect(await readFile(j.path, 'utf8')).toBe(parts.join('\n'));
  });

  it('refuses a line that parses but is not a valid record', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.close();
    await appendFile(
      j.path,
      '{"t":"intent","req":"one","at":"x","p":[]}\n{"t":"unknown","at":"x","refs":[],"why":""}\n',
    );
    await expect(openRun(stateDir)).rejects.toThrow(/line 2: not a valid journal record/);
  });

  it('refuses a journal of a newer format instead of calling it torn', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    await j.close();
    const text = await readFile(j.path, 'utf8');
    await writeFile(j.path, text.replace('"v":1', '"v":2'));
    await expect(openRun(stateDir)).rejects.toThrow(/newer version/);
  });

  it('reads a journal with long lines across read chunks', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    const many = Array.from({ length: 5000 }, (_, i) => ({ ref: `REF-${i}`, hash: `h${i}` }));
    await j.recordIntent(1, many);
    j.recordOutcome(
      1,
      many.map((m) => ({ ref: m.ref, status: 'success' })),
    );
    await j.recordIntent(2, [{ ref: 'LAST', hash: 'hl' }]);
    await j.close();
    expect((await stat(j.path)).size).toBeGreaterThan(3 * 64 * 1024);
    const again = await openRun(stateDir);
    expect(again.stateOf('REF-4999')).toMatchObject({ state: 'confirmed', status: 'success' });
    expect(again.stateOf('LAST')).toEqual({ state: 'in-flight', req: 2, hash: 'hl', at: expect.any(String) });
    expect(again.inFlight()).toHaveLength(1);
    await again.close();
  });
});

/** Closes a journal and opens it again from disk. */
async function reopen(j: RunJournal): Promise<RunJournal> {
  await j.close();
  const raw = await readFile(j.path, 'utf8');
  const head = JSON.parse(raw.slice(0, raw.indexOf('\n'))) as { input_hash: string };
  const stateDir = dirname(dirname(dirname(j.path)));
  const again = await openRun(stateDir, head.input_hash);
  expect(again.resumed).toBe(true);
  return again;
}
