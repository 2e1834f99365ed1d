import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_CREDENTIALS, type SandboxHandle, startSandbox } from '../../src/sandbox/index.js';
import { LedgerService } from '../helpers/ledger-service.js';
import { clockStoppedAtLongWait, FakeClock, type MainResult, runMain } from '../helpers/main.js';
import { freshDatabase, teamRoles } from '../helpers/pg.js';
import { FakeSecretStore } from '../helpers/secret-store.js';

// Issue 41, item 5: every command example of README.md and docs/*.md runs, so a doc that
// drifts from the tool fails here, naming its file, line and command.
//
// The convention: a ```sh block is run, line by line (a line ending in `\` goes on), in a
// fresh home with a stored profile whose base URL is a sandbox started by this file. Each
// line that runs `payouts` (after VAR=value words, or `timeout …`) runs in this process
// through main(); its exit code must be 0, or N when the line's comment says `# exits N`.
// Words before a `|` run in `sh` and feed payouts' standard input; the words after it get
// payouts' standard output and must exit 0 and print something; `> FILE` and `< FILE` are
// files of the home, which for a block running `payouts runs` or `state push` holds a run
// stopped with 2 payouts in flight. `payouts` may be called as `payouts`, `node
// bin/payouts.js` or a path ending in `/payouts`, which must name a file of this clone.
// Lines that do not run payouts (`jq`, `npm`) are not run. A line with no pipe or redirect
// runs as at a terminal 100 columns wide, where each question is answered as a person would:
// "y", or the profile's Client-Id and Client-Secret. `payouts sandbox` is stopped as soon as it
// listens, on a free port. A shared history the docs name (postgres://…@db.example.com/…,
// "$PAYOUTS_STATE_URL") is a fresh database of the tests' PostgreSQL; so is the history of a
// block whose comments name people (`# Ana: …`, `# Bob: …`, `# Carol: …`, `# CI …`,
// `# anyone: …`): each person's line runs as a role of their own, granted as docs/approvals.md
// says, the others as the tables' owner, and a prepared run id the doc writes is the one
// the block's `--prepare` printed. A block that cannot run (a real service) has
// `<!-- doc-test: skip (why) -->` on the line before its fence, or is ```text; one run by
// another test has `<!-- doc-test: run by test/FILE (how) -->`, naming that test.

const ROOT = new URL('../../', import.meta.url);
const DOCS = [
  'README.md',
  ...readdirSync(new URL('docs/', ROOT))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

/** The port the docs' own sandbox examples listen on, which lines here reach as ours. */
const DOC_ORIGIN = 'http://127.0.0.1:8080';
/** The path prefix docs/sandbox.md starts its sandbox with; ours has it too. */
const PREFIX = '/merchant';
/** A shared history as the docs write it, which lines here reach as a database of the tests. */
const SHARED_URL = /postgres:\/\/[^\s'"]*@db\.example\.com\/[^\s'"]*/g;
/** How long one line may take: a line that waits for a person never ends here. */
const LINE_MS = 15_000;
/** References the docs look up, sent to the sandbox before any example runs. */
const SEEDED = ['PO-2026-11-0001', 'PO-1', 'PO-2', 'PO-3', 'NOV-0047', 'DEC-0047'];

/** One line of a doc: where it is, and its text. */
interface Line {
  file: string;
  line: number;
  text: string;
}

/** A fenced block: its language, its lines, and why it is not run (when it is marked so). */
interface Block {
  file: string;
  line: number;
  lang: string;
  body: Line[];
  skip?: string;
  /** The test that runs the block instead (`doc-test: run by FILE (how)`). */
  runBy?: string;
}

/** The fenced blocks of a Markdown file, with the skip mark of the line before each. */
function blocksOf(file: string): Block[] {
  const lines = readFileSync(new URL(file, ROOT), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,})([\w-]*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, lang] = open;
    const before = [...lines.slice(0, i)].reverse().find((l) => l.trim() !== '') ?? '';
    const skip = /<!--\s*doc-test:\s*skip\s*(?:\((.*)\))?\s*-->/.exec(before);
    const runBy = /<!--\s*doc-test:\s*run by\s+(\S+)/.exec(before)?.[1];
    const body: Line[] = [];
    let j = i + 1;
    for (; j < lines.length && lines[j]!.trim() !== fence; j++) {
      body.push({ file, line: j + 1, text: lines[j]!.slice(indent!.length) });
    }
    blocks.push({
      file,
      line: i + 1,
      lang: lang!,
      body,
      skip: skip ? (skip[1] ?? '') : undefined,
      runBy,
    });
    i = j;
  }
  return blocks;
}

/**
 * A line read as a shell reads quotes: where a comment starts (a `#` beginning a word, outside
 * quotes; else the line's length) and the quote left open at its end ('' for none).
 */
function scanQuotes(text: string): { comment: number; open: string } {
  let quote = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = '';
      else if (c === '\\' && quote === '"') i++;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '\\') i++;
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) return { comment: i, open: '' };
  }
  return { comment: text.length, open: quote };
}

/** Whether a line leaves a quote open, as a shell would read on. */
function quoteOpen(text: string): boolean {
  return scanQuotes(text).open !== '';
}

/** A block's commands, each at its first line: a line ending in `\` or in a quote goes on. */
function commandsOf(block: Block): Line[] {
  const out: Line[] = [];
  let held: Line | undefined;
  for (const l of block.body) {
    const text = held
      ? `${held.text}${held.text.endsWith('\n') ? '' : ' '}${l.text.trim()}`
      : l.text;
    const at = held ?? l;
    if (text.endsWith('\\')) held = { ...at, text: text.slice(0, -1).trimEnd() };
    else if (quoteOpen(text)) held = { ...at, text: `${text}\n` };
    else {
      held = undefined;
      if (text.trim()) out.push({ ...at, text });
    }
  }
  if (held) out.push(held);
  return out;
}

/** A word of a command, or an operator the runner understands. */
type Token = { word: string } | { op: '|' | '>' | '>>' | '<' };

/** Where a comment starts: a `#` beginning a word, outside quotes. */
function commentStart(text: string): number {
  return scanQuotes(text).comment;
}

/** A `$NAME` or `${NAME}` at `i`: its value and its length. */
function variable(code: string, i: number, env: Record<string, string>): [string, number] {
  const m = /^\$(?:\{(\w+)\}|(\w+))/.exec(code.slice(i));
  const name = m?.[1] ?? m?.[2];
  if (!m || name === undefined || !(name in env)) {
    throw new Error(`${code.slice(i, i + 12)}…: not a variable this test knows`);
  }
  return [env[name]!, m[0].length];
}

/** Splits a command into words (quotes, `\`, `$VAR`) and operators; throws on anything else. */
function tokenize(code: string, env: Record<string, string>): Token[] {
  const tokens: Token[] = [];
  let word = '';
  let started = false;
  const end = () => {
    if (started) tokens.push({ word });
    word = '';
    started = false;
  };
  for (let i = 0; i < code.length; ) {
    const c = code[i]!;
    if (/\s/.test(c)) {
      end();
      i++;
    } else if (c === "'") {
      const close = code.indexOf("'", i + 1);
      if (close < 0) throw new Error('an unclosed quote');
      word += code.slice(i + 1, close);
      started = true;
      i = close + 1;
    } else if (c === '"') {
      started = true;
      for (i++; code[i] !== '"'; ) {
        if (i >= code.length) throw new Error('an unclosed quote');
        if (code[i] === '\\' && '"\\$`'.includes(code[i + 1] ?? '')) {
          word += code[i + 1];
          i += 2;
        } else if (code[i] === '$') {
          const [value, n] = variable(code, i, env);
          word += value;
          i += n;
        } else word += code[i++];
      }
      i++;
    } else if (c === '\\') {
      word += code[i + 1] ?? '';
      started = true;
      i += 2;
    } else if (c === '$') {
      const [value, n] = variable(code, i, env);
      word += value;
      started = true;
      i += n;
    } else if (c === '|' && code[i + 1] !== '|') {
      end();
      tokens.push({ op: '|' });
      i++;
    } else if ((c === '>' || c === '<') && !started) {
      end();
      const op = code.startsWith('>>', i) ? '>>' : c;
      tokens.push({ op });
      i += op.length;
    } else if ('&;`()<>|'.includes(c)) {
      throw new Error(`"${c}": a shell construct this test does not run`);
    } else {
      word += c;
      started = true;
      i++;
    }
  }
  end();
  return tokens;
}

/** A word as `sh` reads it back. */
function shellQuote(word: string): string {
  return /^[\w./=:,+@%-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Words before `payouts` that set its environment or wrap it (`timeout -k 60s 30m`). */
function payoutsAt(words: string[]): number {
  let i = 0;
  while (i < words.length && /^\w+=/.test(words[i]!)) i++;
  if (words[i] === 'timeout') {
    for (i++; words[i]?.startsWith('-'); i++) if (/^-[ks]$/.test(words[i]!)) i++;
    i++;
  }
  // A clone's own entry point, as a CI job in the clone calls it.
  if (words[i] === 'node' && words[i + 1]?.endsWith('payouts.js')) return i + 1;
  const w = words[i];
  return w === 'payouts' || w?.endsWith('/payouts') ? i : -1;
}

/** Why a path the doc calls payouts by (`./node_modules/.bin/payouts`) fails in a clone. */
function missingPath(word: string): string | undefined {
  if (word === 'payouts' || existsSync(new URL(word, ROOT))) return undefined;
  return `${word}: no such file in a clone of payouts (call the installed \`payouts\`, or \`node bin/payouts.js\` in a clone)`;
}

/** Everything one example needs: its home, its environment, the sandbox's URL. */
interface Place {
  dir: string;
  env: Record<string, string>;
  origin: string;
  /** The shared history a line names (`$PAYOUTS_STATE_URL`, postgres://…), made when first named. */
  stateUrl?: string;
  /** Whether the block's comments name people: its lines run on a shared history, as them. */
  team?: boolean;
  /** Each person's role on that history, made once its tables exist. */
  people?: Record<Person, string>;
  /** The prepared run the block's `--prepare` recorded, which its other lines name. */
  prepared?: string;
  /** The system keyring a line that stores a secret there uses. */
  keyring: FakeSecretStore;
}

/** The people the docs' comments name: `# Bob: …`, `# or CI, …`. */
type Person = 'ana' | 'bob' | 'carol' | 'ci';

/** The person a line's comment names, if any ("anyone" is Ana, who may send what she prepared). */
function personOf(comment: string): Person | undefined {
  const m = /^#\s*(?:or\s+)?(Ana|Bob|Carol|CI|anyone)\b/.exec(comment.trim());
  if (!m) return undefined;
  return m[1] === 'anyone' ? 'ana' : (m[1]!.toLowerCase() as Person);
}

/** The shared history a person's line runs on: their role's URL (the owner's for no one). */
async function historyOf(place: Place, who: Person | undefined): Promise<string> {
  place.stateUrl ??= await freshDatabase();
  if (who === undefined) return place.stateUrl;
  // Roles are granted on tables the block's first line (as the owner) made.
  if (!place.people) {
    const first = await teamRoles(place.stateUrl);
    const second = await teamRoles(place.stateUrl);
    place.people = { ana: first.ana, bob: first.bob, carol: second.ana, ci: second.bob };
  }
  return place.people[who];
}

/**
 * A terminal's standard input that answers each question once, as a person would: "y", the
 * profile's Client-Id, its Client-Secret, no base URL.
 */
function answering(place: Place): { input: PassThrough; onStderr(text: string): void } {
  const input = new PassThrough();
  const answers: Array<[RegExp, string]> = [
    [/\[y\/N\] $/, 'y'],
    [/Client-Id[^:\n]*: /, place.env.PAYOUTS_ID ?? ''],
    [/Client-Secret[^:\n]*: /, place.env.PAYOUTS_SECRET ?? ''],
    [/Base URL[^:\n]*: /, ''],
  ];
  const given = new Set<RegExp>();
  return {
    input,
    onStderr(text) {
      const shown = text.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '');
      for (const [question, answer] of answers) {
        if (given.has(question) || !question.test(shown)) continue;
        given.add(question);
        // Typed once the prompt is listening, as a person types after reading it.
        setTimeout(() => input.write(`${answer}\r`), 10);
      }
    },
  };
}

/** Runs a shell command line in the example's home, with `input` on standard input. */
function shell(command: string, place: Place, input?: string) {
  return spawnSync('sh', ['-c', command], {
    cwd: place.dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...place.env },
    input,
    encoding: 'utf8',
    timeout: 20_000,
  });
}

/** A doc's own address of the sandbox, as ours. */
function ours(text: string, place: Place): string {
  return text.replaceAll(DOC_ORIGIN, place.origin);
}

/**
 * Runs one line; returns what is wrong with it (undefined: nothing), or null when it does
 * not run payouts.
 */
async function runLine(l: Line, place: Place): Promise<string | undefined | null> {
  const cut = commentStart(l.text);
  const comment = l.text.slice(cut);
  const expected = Number(/\bexits (\d+)/.exec(comment)?.[1] ?? 0);
  let code = l.text.slice(0, cut);
  const vars = { ...place.env };
  // The docs' shared history is a database of the tests' PostgreSQL, new for each block. A
  // URL written on the command line carries no password (payouts refuses one there): the
  // password comes from PGPASSWORD, as the docs say.
  const shared = /postgres:\/\/|PAYOUTS_STATE_URL/.test(code);
  if (shared) {
    place.stateUrl ??= await freshDatabase();
    vars.PAYOUTS_STATE_URL = place.stateUrl;
    const bare = new URL(place.stateUrl);
    bare.password = '';
    code = code.replace(SHARED_URL, `'${bare}'`);
  }
  // A team's block: each line on the team's history, as the person its comment names.
  if (place.team) vars.PAYOUTS_STATE_URL = await historyOf(place, personOf(comment));
  const tokens = tokenize(code, vars);
  const segments: Token[][] = [[]];
  for (const t of tokens) {
    if ('op' in t && t.op === '|') segments.push([]);
    else segments.at(-1)!.push(t);
  }
  const wordsOf = (s: Token[]) => s.map((t) => ('word' in t ? t.word : t.op));
  const at = segments.findIndex((s) => payoutsAt(wordsOf(s)) >= 0);
  if (at < 0) return null;
  const text = (s: Token[][]) => s.map((x) => wordsOf(x).map(shellQuote).join(' ')).join(' | ');
  let stdin: string | undefined;
  if (at > 0) {
    const before = shell(text(segments.slice(0, at)), place);
    if (before.status !== 0) return `the words before payouts exit ${before.status}`;
    stdin = before.stdout;
  }
  const own = segments[at]!;
  let out: string | undefined;
  const words: string[] = [];
  for (let i = 0; i < own.length; i++) {
    const t = own[i]!;
    const next = own[i + 1];
    if ('op' in t) {
      if (!next || !('word' in next)) return `${t.op} names no file`;
      if (t.op === '<') stdin = readFileSync(join(place.dir, next.word), 'utf8');
      else out = next.word;
      i++;
    } else words.push(t.word);
  }
  const start = payoutsAt(words);
  const missing = missingPath(words[start]!);
  if (missing) return missing;
  const env: Record<string, string> = {
    ...place.env,
    ...(place.team ? { PAYOUTS_STATE_URL: vars.PAYOUTS_STATE_URL! } : {}),
  };
  // The password of a URL written on the command line, as a person gives it.
  if (shared && place.stateUrl)
    env.PGPASSWORD = decodeURIComponent(new URL(place.stateUrl).password);
  for (const w of words.slice(0, start)) {
    const eq = w.indexOf('=');
    if (eq > 0) env[w.slice(0, eq)] = ours(w.slice(eq + 1), place);
  }
  // The prepared run the doc names is the one this block prepared.
  const prepared = (w: string) =>
    place.prepared && /^p[0-9a-f]{4,15}$/.test(w) ? place.prepared : w;
  let argv = words.slice(start + 1).map((w) => prepared(ours(w, place)));
  const sandbox = argv[0] === 'sandbox';
  // A fixed port may be taken on this machine: the sandbox gets a free one, and stops at once.
  if (sandbox) argv = argv.map((w, i) => (argv[i - 1] === '--port' ? '0' : w));
  const atTerminal = segments.length === 1 && out === undefined && stdin === undefined;
  const person = atTerminal ? answering(place) : undefined;
  const previous = process.cwd();
  let r: MainResult;
  try {
    // Input files are read from the working folder, as a person's shell would.
    process.chdir(place.dir);
    const run = runMain(argv, {
      env,
      cwd: place.dir,
      clock: new FakeClock(),
      secretStore: place.keyring.factory,
      ...(person ? { input: person.input, onStderr: person.onStderr } : { stdin: stdin ?? '' }),
      // A terminal without colours, hence without the spinner, which a test stream cannot draw.
      ...(atTerminal ? { env: { ...env, NO_COLOR: '1' } } : {}),
      terminal: atTerminal ? { columns: 100 } : undefined,
      interrupt: sandbox ? AbortSignal.abort() : undefined,
    });
    let late: NodeJS.Timeout | undefined;
    const timedOut = new Promise<undefined>((resolve) => {
      late = setTimeout(() => resolve(undefined), LINE_MS);
    });
    const ended = await Promise.race([run, timedOut]);
    clearTimeout(late);
    if (!ended) return `did not end within ${LINE_MS / 1000} s: does it wait for a person?`;
    r = ended;
  } finally {
    process.chdir(previous);
    person?.input.end();
  }
  if (out !== undefined) writeFileSync(join(place.dir, out), r.stdout);
  place.prepared =
    /^Prepared run (p[0-9a-f]{15})/m.exec(r.stdout)?.[1] ??
    /"prepared_run_id": "(p[0-9a-f]{15})"/.exec(r.stdout)?.[1] ??
    place.prepared;
  if (process.env.DOC_TEST_TRACE)
    console.log(argv, r.code, r.stdout.slice(-500), r.stderr.slice(-1500));
  if (r.code !== expected) {
    const said = r.stderr.trim().split('\n').slice(-3).join('\n    ');
    return `exits ${r.code}, the doc expects ${expected}${expected ? '' : " (else add '# exits N')"}:\n    ${said}`;
  }
  if (segments.length > at + 1) {
    const after = shell(text(segments.slice(at + 1)), place, r.stdout);
    if (after.status !== 0) return `the words after payouts exit ${after.status}: ${after.stderr}`;
    if (!after.stdout.trim()) return `the words after payouts print nothing from:\n${r.stdout}`;
  }
  return undefined;
}

let sandbox: SandboxHandle;
/** A service that never answers a create: a run to it stops with its payouts in flight. */
let silent: LedgerService;
const made: string[] = [];
/** The --report file of the seeded payouts, which examples read as may.report.csv. */
let report = '';

/** A fresh folder (removed after the file) under the system's temporary one. */
function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'payouts-doc-'));
  made.push(dir);
  return dir;
}

/**
 * A home with a stored profile for our sandbox and the input files the docs name; for a block
 * that reads runs, with a run stopped with its payouts in flight.
 */
async function freshPlace(n: number, withRunInFlight: boolean): Promise<Place> {
  const dir = freshDir();
  const place: Place = {
    dir,
    keyring: new FakeSecretStore(),
    origin: new URL(sandbox.baseUrl).origin,
    env: {
      HOME: dir,
      PAYOUTS_ID: SANDBOX_CREDENTIALS.clientId,
      PAYOUTS_SECRET: SANDBOX_CREDENTIALS.clientSecret,
    },
  };
  const stored = await runMain(
    [
      'config',
      'set-credentials',
      '--client-id',
      SANDBOX_CREDENTIALS.clientId,
      '--client-secret-stdin',
      '--no-keyring',
      '--base-url',
      sandbox.baseUrl,
    ],
    { env: place.env, stdin: SANDBOX_CREDENTIALS.clientSecret },
  );
  expect(stored.code, stored.stderr).toBe(0);
  // The sandbox outlives each home: every example's payouts are its own.
  const csv = (tag: string) =>
    `reference_id,amount,currency,recipient\nD${n}-${tag}-1,10.00,EUR,a@example.com\nD${n}-${tag}-2,20.50,EUR,b@example.com\n`;
  for (const name of ['run', 'a', 'may', 'nov', 'payouts']) {
    writeFileSync(join(dir, `${name}.csv`), csv(name));
  }
  const payout = (tag: string) => ({
    reference_id: `D${n}-${tag}`,
    amount: '5.00',
    currency: 'EUR',
    recipient: 'c@example.com',
  });
  writeFileSync(join(dir, 'b.json'), JSON.stringify({ payouts: [payout('b')] }));
  writeFileSync(join(dir, 'run.ndjson'), `${JSON.stringify(payout('nd'))}\n`);
  for (const name of ['may.report.csv', 'nov.report.csv']) writeFileSync(join(dir, name), report);
  if (!withRunInFlight) return place;
  // Ctrl-C during the wait to read the cut request's payouts back leaves them in flight.
  writeFileSync(join(dir, 'left.csv'), csv('left'));
  const { clock, stop } = clockStoppedAtLongWait();
  const left = await runMain(['send', join(dir, 'left.csv'), '--yes'], {
    env: silent.env(place.env),
    clock,
    interrupt: stop.signal,
  });
  expect(left.code, left.stderr).toBe(130);
  return place;
}

beforeAll(async () => {
  sandbox = await startSandbox({ stateDir: freshDir(), pathPrefix: PREFIX });
  silent = await LedgerService.start(() => ({ apply: 'none', cut: true }));
  const seed = freshDir();
  const rows = SEEDED.map((r) => `${r},12.50,EUR,${r.toLowerCase()}@example.com`);
  writeFileSync(
    join(seed, 'seed.csv'),
    `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`,
  );
  const sent = await runMain(
    ['send', join(seed, 'seed.csv'), '--yes', '--report', join(seed, 'report.csv')],
    {
      env: {
        HOME: seed,
        PAYOUTS_BASE_URL: sandbox.baseUrl,
        PAYOUTS_CLIENT_ID: SANDBOX_CREDENTIALS.clientId,
        PAYOUTS_CLIENT_SECRET: SANDBOX_CREDENTIALS.clientSecret,
      },
      clock: new FakeClock(),
    },
  );
  expect(sent.code, sent.stderr).toBe(0);
  report = readFileSync(join(seed, 'report.csv'), 'utf8');
});

afterAll(async () => {
  await sandbox?.close();
  await silent?.close();
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

let blockNumber = 0;

describe('the command examples of the docs run as written', () => {
  for (const file of DOCS) {
    it(file, async () => {
      const problems: string[] = [];
      for (const block of blocksOf(file)) {
        const where = (l: { line: number }) => `${file}:${l.line}`;
        const commands = block.body.some((l) => /^payouts /.test(l.text));
        if (commands && block.lang !== 'sh' && block.lang !== 'text') {
          problems.push(
            `${where(block)}: a block of commands: mark it \`\`\`sh (run) or \`\`\`text`,
          );
        }
        if (block.lang !== 'sh') continue;
        if (block.skip !== undefined) {
          if (!block.skip.trim()) problems.push(`${where(block)}: doc-test: skip (say why)`);
          continue;
        }
        if (block.runBy !== undefined) {
          const by = new URL(block.runBy, ROOT);
          const names = existsSync(by) && readFileSync(by, 'utf8').includes(`${file}`);
          if (!names) problems.push(`${where(block)}: ${block.runBy} does not run it`);
          continue;
        }
        const lines = commandsOf(block);
        // Blocks without a payouts line (npm, sqlite3) have nothing to run.
        if (!lines.some((l) => /(^|[\s/])payouts\s/.test(l.text))) continue;
        const readsRuns = lines.some((l) => /payouts (runs|state push)/.test(l.text));
        const place = await freshPlace(++blockNumber, readsRuns);
        place.team = lines.some((l) => personOf(l.text.slice(commentStart(l.text))) !== undefined);
        for (const l of lines) {
          let wrong: string | undefined | null;
          try {
            if (process.env.DOC_TEST_TRACE) console.log(`${where(l)}: ${l.text}`);
            wrong = await runLine(l, place);
          } catch (err) {
            wrong = `${(err as Error).message}: run it differently, or mark the block <!-- doc-test: skip (why) -->`;
          }
          if (wrong) problems.push(`${where(l)}: ${l.text.trim()}\n  ${wrong}`);
        }
      }
      expect(problems.join('\n')).toBe('');
    });
  }

  it('reads commands as a shell does', () => {
    const env = { X: 'x y' };
    expect(tokenize(`a 'b c' "$X" \\| d | e > f`, env)).toEqual([
      { word: 'a' },
      { word: 'b c' },
      { word: 'x y' },
      { word: '|' },
      { word: 'd' },
      { op: '|' },
      { word: 'e' },
      { op: '>' },
      { word: 'f' },
    ]);
    expect(() => tokenize('a && b', env)).toThrow(/shell construct/);
    expect(commentStart(`awk '$1 ~ /#/' # exits 2`)).toBe(15);
    expect(payoutsAt(['timeout', '-k', '60s', '30m', './node_modules/.bin/payouts'])).toBe(4);
    expect(payoutsAt(['A=1', 'payouts', 'status'])).toBe(1);
    expect(payoutsAt(['jq', '.exit_code'])).toBe(-1);
    expect(payoutsAt(['timeout', '30m', 'node', 'bin/payouts.js', 'send'])).toBe(3);
    // Issue 49: a CI line that names a file a clone does not have fails here.
    expect(missingPath('./node_modules/.bin/payouts')).toMatch(/no such file in a clone/);
    expect(missingPath('bin/payouts.js')).toBeUndefined();
    expect(personOf('# Bob: sees the summary')).toBe('bob');
    expect(personOf('# or CI, from an empty folder')).toBe('ci');
    expect(personOf('# two other people approve each run')).toBeUndefined();
    const block = { file: 'x.md', line: 1, lang: 'sh' };
    const body = ['a \\', '  b', 'c'].map((text, i) => ({ file: 'x.md', line: i + 2, text }));
    expect(commandsOf({ ...block, body })).toEqual([
      { file: 'x.md', line: 2, text: 'a b' },
      { file: 'x.md', line: 4, text: 'c' },
    ]);
  });
});
