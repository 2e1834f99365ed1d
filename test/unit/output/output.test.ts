import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { InternalError, InterruptedError } from '../../../src/errors.js';
import { Output, RawNumber, rawListItem, stringifyJson } from '../../../src/output/output.js';

/** An Output writing into strings, as if no terminal were attached. */
function capture(json = true) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const output = new Output({
    stdout,
    stderr,
    stdin: new PassThrough(),
    json,
    debug: false,
    noColor: false,
  });
  return { output, text: () => ({ out, err }) };
}

describe('Output JSON', () => {
  it('writes amounts digit for digit', () => {
    expect(stringifyJson({ a: new RawNumber('12.50'), b: [new RawNumber('0.100')] })).toBe(
      '{\n  "a": 12.50,\n  "b": [\n    0.100\n  ]\n}',
    );
  });

  it('streams a document with a long list that parses back to the same value', async () => {
    const { output, text } = capture();
    const items = Array.from({ length: 2500 }, (_, i) => `{"ref": "R${i}", "amount": ${i}.10}`);
    await output.printJsonWithRawList(
      { count: 2500, nested: { x: 1 } },
      'results',
      items.map(rawListItem),
    );
    const doc = JSON.parse(text().out) as {
      count: number;
      nested: { x: number };
      results: Array<{ ref: string; amount: number }>;
    };
    expect(doc.count).toBe(2500);
    expect(doc.nested).toEqual({ x: 1 });
    expect(doc.results).toHaveLength(2500);
    expect(doc.results[2499]).toEqual({ ref: 'R2499', amount: 2499.1 });
    expect(text().out).toContain('"amount": 7.10');
  });

  it('writes the list one item a line, however the raw text is cut into chunks', async () => {
    const items = Array.from({ length: 300 }, (_, i) => `{"ref": "R${i}", "note": "✓ ${i}"}`);
    const expected = `{\n  "count": 300,\n  "results": [\n${items.map((i) => `    ${i}`).join(',\n')}\n  ]\n}\n`;
    // The text cut at every kind of place: inside an item, between its comma and line break.
    const text = items.map(rawListItem).join('');
    const cuts = [0, 1, 7, 100, 101, text.length - 2, text.length - 1, text.length];
    const chunks = cuts.slice(1).map((end, k) => text.slice(cuts[k], end));
    const raw = capture();
    await raw.output.printJsonWithRawList({ count: 300 }, 'results', chunks);
    expect(raw.text().out).toBe(expected);
  });

  it('writes an empty list as valid JSON, and refuses a cut-off one', async () => {
    const raw = capture();
    await raw.output.printJsonWithRawList({ count: 0 }, 'results', ['']);
    expect(raw.text().out).toBe('{\n  "count": 0,\n  "results": []\n}\n');
    expect(JSON.parse(raw.text().out)).toEqual({ count: 0, results: [] });
    const cut = capture();
    await expect(cut.output.printJsonWithRawList({}, 'results', ['    {"a": 1}'])).rejects.toThrow(
      /complete item/,
    );
  });

  it('refuses a second document', () => {
    const { output } = capture();
    output.printJson({ a: 1 });
    expect(() => output.printJson({ b: 2 })).toThrow(/second JSON document/);
    expect(() => output.printJson({ c: 3 })).toThrow(InternalError);
  });

  it('writes no colour codes when the streams are not terminals', () => {
    const { output, text } = capture(false);
    output.warn('careful');
    output.print(output.color.red('plain'));
    expect(text().err).toBe('warning: careful\n');
    expect(text().out).toBe('plain\n');
  });
});

describe('Output prompts', () => {
  /** An Output whose stdin is fed `input`. */
  function prompted(input: string | null) {
    const stdin = new PassThrough();
    const stderr = new PassThrough();
    stderr.resume();
    const output = new Output({
      stdout: new PassThrough(),
      stderr,
      stdin,
      json: false,
      debug: false,
      noColor: true,
    });
    setTimeout(() => (input === null ? stdin.end() : stdin.write(input)), 10);
    return output;
  }

  it('confirm defaults to No on an empty answer, and accepts y', async () => {
    expect(await prompted('\n').confirm('Send?')).toBe(false);
    expect(await prompted('y\n').confirm('Send?')).toBe(true);
    expect(await prompted('yes\n').confirm('Send?')).toBe(true);
    expect(await prompted('n\n').confirm('Send?')).toBe(false);
  });

  it('treats the end of input at a prompt as an interruption, not a crash', async () => {
    await expect(prompted(null).confirm('Send?')).rejects.toBeInstanceOf(InterruptedError);
  });
});

describe('Output hidden prompt', () => {
  /** An Output whose stdin is fed `input` once asked, with what it wrote to stderr. */
  function hidden(input: string | null) {
    const stdin = new PassThrough();
    const stderr = new PassThrough();
    let err = '';
    stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    const output = new Output({
      stdout: new PassThrough(),
      stderr,
      stdin,
      json: false,
      debug: false,
      noColor: true,
    });
    setTimeout(() => (input === null ? stdin.end() : stdin.write(input)), 10);
    return { output, stderr: () => err };
  }

  it('returns the answer without echoing it, and leaves stderr open for what follows', async () => {
    const h = hidden('s3cret-answer\r');
    expect(await h.output.ask('Secret: ', true)).toBe('s3cret-answer');
    h.output.warn('after the prompt');
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.stderr()).toContain('Secret:');
    expect(h.stderr()).not.toContain('s3cret');
    expect(h.stderr()).toContain('warning: after the prompt');
  });

  it('treats Ctrl-C or the end of input as an interruption', async () => {
    await expect(hidden('ab\u0003').output.ask('Secret: ', true)).rejects.toBeInstanceOf(
      InterruptedError,
    );
    await expect(hidden(null).output.ask('Secret: ', true)).rejects.toBeInstanceOf(
      InterruptedError,
    );
  });
});

describe('Output.waiting and --quiet', () => {
  it('says what a slow step waits for only where a person watches (stderr a terminal)', async () => {
    const { memoryOutput } = await import('../status/output-helper.js');
    const pipe = memoryOutput();
    pipe.output.waiting('waiting for the service');
    expect(pipe.stderr()).toBe('');
    const tty = memoryOutput({ tty: true });
    tty.output.waiting('waiting for the service');
    expect(tty.stderr()).toBe('waiting for the service\n');
    tty.output.quieten();
    tty.output.waiting('again');
    tty.output.info('a note');
    tty.output.warn('a warning');
    tty.output.error('an error');
    expect(tty.stderr()).toBe('waiting for the service\nerror: an error\n');
  });
});
