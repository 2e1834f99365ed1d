import { once } from 'node:events';
import type { ChalkInstance } from 'chalk';
import { errorCode, InternalError } from '../errors.js';
import type { Env } from '../paths.js';
import { type ChalkConstructor, colorLevel, PLAIN } from './colors.js';
import { terminalText } from './display.js';
import { LiveLine } from './live-line.js';
import { documentLines, stringifyJson, summaryLine, writeRawList } from './json-text.js';
import { askHidden, askLine, saysYes } from './prompts.js';
import type { InStream, OutStream } from './streams.js';
import { type TableLayout, terminalTable, tsvTable } from './table.js';

export type { InStream, OutStream };
export {
  RAW_ITEM_INDENT,
  RawNumber,
  rawListItem,
  resultLine,
  stringifyJson,
} from './json-text.js';

/** What the output module needs to know about the process it writes for. */
export interface OutputOptions {
  stdout: OutStream;
  stderr: OutStream;
  stdin: InStream;
  /** --json: stdout holds exactly one JSON document. */
  json: boolean;
  /**
   * send --json-lines (with `json`): the document as lines instead, each of its `results` one,
   * then the rest of it as a summary line (docs/json.md).
   */
  lines?: boolean;
  /** --debug: HTTP trace and stack traces on stderr. */
  debug: boolean;
  /** NO_COLOR or similar asked for no colour. */
  noColor: boolean;
  /** The environment, for a terminal's own reading of whether it shows colours. */
  env?: Env;
  /**
   * chalk, for the streams that get colours (terminals, unless noColor). Without it nothing is
   * coloured: chalk and its colour detection cost 5 ms of start-up, so callers load it only
   * when a stream is a terminal.
   */
  chalk?: ChalkConstructor;
  /**
   * The keys every document of this command starts with (`schema_version`, `command`), which
   * `document` and `result` write before the command's own; send and status write their own.
   */
  documentHead?: Readonly<Record<string, unknown>>;
}

/** Whether a write error means the stream's reader or terminal has gone. */
function readerGone(err: unknown): boolean {
  const code = errorCode(err);
  return code === 'EPIPE' || code === 'EIO' || code === 'ENXIO';
}

/** Streams that got their run's JSON document: a later error must not write a second one. */
const documented = new WeakSet<object>();

/** Whether a JSON document was written to this stream (by any Output of the run). */
export function jsonWritten(stream: object): boolean {
  return documented.has(stream);
}

/** A progress indicator that is a no-op when stderr is not a terminal. */
export interface Progress {
  update(text: string): void;
  /**
   * A wait of `ms` with what it waits for: a countdown on the spinner's line until the
   * returned function is called. Elsewhere `line`, when given, is written once as it starts.
   */
  wait(what: string, ms: number, line?: string): () => void;
  stop(): void;
}

/**
 * The single way the CLI writes: results to stdout (a table or one JSON document), and
 * messages, warnings, progress and debug traces to stderr.
 */
export class Output {
  readonly json: boolean;
  /** send --json-lines: the document as result lines, then a summary line. */
  readonly lines: boolean;
  readonly debugEnabled: boolean;
  /** Colours for stdout: off when stdout is not a terminal or NO_COLOR is set. */
  readonly color: ChalkInstance;
  /** Colours for stderr. */
  readonly errColor: ChalkInstance;
  private jsonWritten = false;
  private activeProgress: { stop(): void } | undefined;
  /** The running spinner's line, which shows waits that start elsewhere (see countdown). */
  private activeLine: LiveLine | undefined;
  /** Set once stdout's reader has gone (EPIPE): what is left to print is dropped. */
  private stdoutGone = false;
  /** Set once stderr's terminal or reader has gone: messages are dropped. */
  private stderrGone = false;
  /** --quiet: stderr gets errors only (and questions): no notes, warnings or progress. */
  private quiet = false;

  constructor(private readonly opts: OutputOptions) {
    this.json = opts.json;
    this.lines = opts.json && opts.lines === true;
    this.debugEnabled = opts.debug;
    const colors = (s: OutStream) => {
      const level = colorLevel(s, opts.noColor, opts.env);
      return level && opts.chalk ? new opts.chalk({ level }) : PLAIN;
    };
    this.color = colors(opts.stdout);
    this.errColor = colors(opts.stderr);
    // `payouts send --json | head` closes the pipe mid-document. The run must still finish
    // (the journal records every outcome) and exit with its own code, not crash on EPIPE.
    opts.stdout.on('error', (err: NodeJS.ErrnoException) => {
      if (!readerGone(err)) throw err;
      if (this.stdoutGone) return;
      this.stdoutGone = true;
      this.warn(
        `standard output was closed before everything was written (${errorCode(err)}): the rest of the output is dropped, and the run goes on to its end`,
      );
    });
    // A closed terminal (SIGHUP) fails every later write with EIO: the run still finishes
    // and records every outcome, with no one left to read its messages.
    opts.stderr.on('error', (err: NodeJS.ErrnoException) => {
      if (!readerGone(err)) throw err;
      this.stderrGone = true;
      this.activeProgress = undefined;
      this.activeLine = undefined;
    });
  }

  /** Whether a person is at the keyboard: stdin and stderr are both terminals. */
  get interactive(): boolean {
    return Boolean(this.opts.stdin.isTTY && this.opts.stderr.isTTY);
  }

  /** Whether human output (tables, summaries) goes to stdout; false under --json. */
  get human(): boolean {
    return !this.json;
  }

  /**
   * Writes human-readable result text to stdout; ignored under --json. Control characters
   * other than our line breaks, tabs and colours are escaped (see terminalText), on a pipe too.
   */
  print(text = ''): void {
    if (this.json) return;
    this.clearProgress();
    const own = { colours: this.color.level > 0, lineBreaks: true, tabs: true };
    this.writeOut(`${terminalText(text, own)}\n`);
  }

  /**
   * Writes a line that goes with a table for a person (a closing line, a note): to stdout on
   * a terminal, to stderr elsewhere, so that a piped table stays plain tab-separated rows.
   * Ignored under --json.
   */
  printAside(text: string): void {
    if (this.json) return;
    if (this.opts.stdout.isTTY) this.print(text);
    else if (!this.quiet) this.writeErr(text);
  }

  /** Whether stdout is a terminal, where binary output (a workbook) must not go. */
  get stdoutIsTerminal(): boolean {
    return Boolean(this.opts.stdout.isTTY);
  }

  /** Whether stderr is a terminal: messages there are read by a person. */
  get stderrIsTerminal(): boolean {
    return Boolean(this.opts.stderr.isTTY);
  }

  /** Writes bytes to stdout as they are (a workbook), waiting for a slow reader to take them. */
  async printBytes(bytes: Uint8Array): Promise<void> {
    this.clearProgress();
    if (this.stdoutGone || this.opts.stdout.destroyed) return;
    if (!this.opts.stdout.write(bytes)) await this.drained();
  }

  /**
   * Writes the one JSON document of a --json run to stdout; under --json-lines, a send's
   * document as its lines: each result, then the summary.
   */
  printJson(doc: unknown): void {
    this.claimJson();
    if (!this.lines) {
      this.writeOut(`${stringifyJson(doc)}\n`);
      return;
    }
    for (const line of documentLines(doc)) this.writeOut(line);
  }

  /**
   * Writes a --json-lines run's result lines as they come, in chunks of whole lines (see
   * resultLine), waiting for a slow reader, then its summary line: the rest of its document.
   */
  async printJsonLines(summary: Record<string, unknown>, lines: Iterable<string>): Promise<void> {
    this.claimJson();
    for (const chunk of lines) {
      if (!this.writeOut(chunk)) await this.drained();
    }
    this.writeOut(summaryLine(summary));
  }

  /**
   * Writes one JSON document whose last field is a long list, one item per line, so a run of
   * a million results never sits in memory as one object or one string. The list comes as raw
   * text: the concatenated chunks are every item as rawListItem made it, in order, so a caller
   * holding items in that form hands over whole runs of them at once, with no string or
   * separator per item (a generic serialiser per item cost a tenth of a large run).
   */
  async printJsonWithRawList(
    head: Record<string, unknown>,
    key: string,
    chunks: Iterable<string>,
  ): Promise<void> {
    this.claimJson();
    await writeRawList(head, key, chunks, {
      write: (text) => this.writeOut(text),
      drained: () => this.drained(),
    });
  }

  /** Writes to stdout unless its reader has gone; false when the caller should wait for drain. */
  private writeOut(text: string): boolean {
    if (this.stdoutGone || this.opts.stdout.destroyed) return true;
    return this.opts.stdout.write(text);
  }

  /** Waits until stdout drains or its reader goes (EPIPE, see the constructor). */
  private async drained(): Promise<void> {
    try {
      await once(this.opts.stdout, 'drain');
    } catch (err) {
      if (errorCode(err) !== 'EPIPE') throw err;
    }
  }

  /** Makes sure a --json run writes one document only. */
  private claimJson(): void {
    if (this.jsonWritten) {
      throw new InternalError('a second JSON document was about to be written');
    }
    this.jsonWritten = true;
    documented.add(this.opts.stdout);
  }

  /** Writes the command's --json document: its head (see OutputOptions), then `fields`. */
  document(fields: object): void {
    this.printJson({ ...this.opts.documentHead, ...fields });
  }

  /** Writes the result: the document under --json, otherwise the human text. */
  result(fields: object, human: () => string): void {
    if (this.json) this.document(fields);
    else this.print(human());
  }

  /** --quiet: from now on stderr gets errors only (and questions). */
  quieten(): void {
    this.quiet = true;
  }

  /** An informational message on stderr (not under --quiet). */
  info(message: string): void {
    if (!this.quiet) this.writeErr(message);
  }

  /** A warning on stderr (not under --quiet). */
  warn(message: string): void {
    if (!this.quiet) this.writeErr(`${this.errColor.yellow('warning:')} ${message}`);
  }

  /** An error message on stderr. */
  error(message: string): void {
    this.writeErr(`${this.errColor.red('error:')} ${message}`);
  }

  /**
   * What a slow step waits for, for a person at a terminal (stderr is one; not under --quiet):
   * a line above the spinner, which goes on.
   */
  waiting(message: string): void {
    if (!this.opts.stderr.isTTY || this.quiet || this.stderrGone) return;
    const spinner = this.activeProgress as { clear?(): unknown; render?(): unknown } | undefined;
    if (!spinner?.clear || !spinner.render) {
      this.writeErr(message);
      return;
    }
    spinner.clear();
    const own = { colours: this.errColor.level > 0, lineBreaks: true };
    this.opts.stderr.write(`${terminalText(message, own)}\n`);
    spinner.render();
  }

  /** A debug trace line on stderr, only with --debug. */
  debug(message: string): void {
    if (this.debugEnabled) this.writeErr(this.errColor.dim(`debug: ${message}`));
  }

  /**
   * Starts a spinner on a terminal; elsewhere returns a progress that prints nothing. A
   * terminal that reports 0 columns gets none: the spinner would redraw without end.
   */
  async progress(text: string): Promise<Progress> {
    const { stderr } = this.opts;
    if (this.json || this.quiet || this.opts.noColor || !stderr.isTTY || stderr.columns === 0) {
      const wait = (_what: string, _ms: number, line?: string) => {
        if (line !== undefined) this.info(line);
        return () => {};
      };
      return { update() {}, wait, stop() {} };
    }
    const { default: ora } = await import('ora');
    // discardStdin would put the terminal in raw mode, where Ctrl-C is a key, not SIGINT, and
    // it reads that key only while stdin flows: with --yes nothing had read stdin, so the
    // key went unseen and the run could not be stopped.
    // ora would read process.env for CI and TERM itself; the run's own environment decides.
    const env = this.opts.env ?? {};
    const isEnabled = !('CI' in env) && env.TERM !== 'dumb';
    const spinner = ora({ text, stream: stderr, discardStdin: false, isEnabled }).start();
    this.activeProgress = spinner;
    const line = new LiveLine(text, (t) => {
      spinner.text = t;
    });
    this.activeLine = line;
    return {
      update: (t) => line.update(t),
      wait: (what, ms) => line.wait(what, ms),
      stop: () => {
        line.stop();
        spinner.stop();
        if (this.activeProgress === spinner) this.activeProgress = undefined;
        if (this.activeLine === line) this.activeLine = undefined;
      },
    };
  }

  /**
   * A wait of `ms` counted down on the running spinner's line, for a wait that its own code
   * cannot reach (state.db's lock, met by the writer thread; a slow answer, met by the HTTP
   * client). Without a spinner, `line`, when given, is written once on a terminal (waiting).
   */
  countdown(what: string, ms: number, line?: string): () => void {
    if (this.activeLine) return this.activeLine.wait(what, ms);
    if (line) this.waiting(line);
    return () => {};
  }

  /** Asks a yes/no question on the terminal; the default is No. */
  async confirm(question: string): Promise<boolean> {
    return saysYes(await this.ask(`${question} [y/N] `));
  }

  /** Asks for a line of text on the terminal (prompts.ts); `hidden` keeps it from being echoed. */
  async ask(text: string, hidden = false): Promise<string> {
    this.clearProgress();
    const question = terminalText(text, { colours: this.errColor.level > 0, lineBreaks: true });
    const { stdin, stderr } = this.opts;
    return hidden ? askHidden(stdin, stderr, question) : askLine(stdin, stderr, question);
  }

  /**
   * Renders a table: on a terminal fitted to its width (see terminalTable), elsewhere as
   * tab-separated lines with a header, whole values and no colours, for cut, awk and
   * spreadsheets. A cell's control characters are escaped, tabs and line breaks included,
   * so no text from outside can split a row or a column.
   */
  async table(head: string[], rows: string[][], layout: TableLayout = {}): Promise<string> {
    const own = { colours: this.color.level > 0, lineBreaks: false };
    const cells = rows.map((row) => row.map((cell) => terminalText(cell, own)));
    if (!this.opts.stdout.isTTY) return tsvTable(head, cells);
    const width = this.opts.stdout.columns || 80;
    return terminalTable(head, cells, { ...layout, width, bold: (t) => this.color.bold(t) });
  }

  private clearProgress(): void {
    this.activeProgress?.stop();
    this.activeProgress = undefined;
    this.activeLine?.stop();
    this.activeLine = undefined;
  }

  /**
   * Writes a message line to stderr, escaped as print escapes stdout text; above a running
   * spinner, which goes on (its countdowns would otherwise stop at the first warning).
   */
  private writeErr(message: string): void {
    const spinner = this.activeProgress as { clear?(): unknown; render?(): unknown } | undefined;
    const keep = spinner?.clear !== undefined && spinner.render !== undefined;
    if (!keep) this.clearProgress();
    if (this.stderrGone || this.opts.stderr.destroyed) return;
    const own = { colours: this.errColor.level > 0, lineBreaks: true };
    if (keep) spinner.clear!();
    this.opts.stderr.write(`${terminalText(message, own)}\n`);
    if (keep) spinner.render!();
  }
}
