import type { Command } from 'commander';

/** What a value completes to: one of fixed choices, file names, or anything (nothing offered). */
export type Completes = { choices: readonly string[] } | 'file' | 'text';

/** An option value or an argument: its name as help shows it, and what it completes to. */
export interface ValueSpec {
  name: string;
  completes: Completes;
}

/** One option as completion needs it. */
export interface OptionSpec {
  /** The names as typed: ["-y", "--yes"]. */
  names: string[];
  description: string;
  /** The value it takes as the next word; absent for a flag or an optional value. */
  value?: ValueSpec;
}

/** One positional argument. */
export interface ArgumentSpec extends ValueSpec {
  variadic: boolean;
  required: boolean;
}

/** A command and everything below it: what the generators turn into scripts. */
export interface CommandSpec {
  name: string;
  aliases: string[];
  description: string;
  options: OptionSpec[];
  arguments: ArgumentSpec[];
  commands: CommandSpec[];
}

/**
 * File names complete a value named "file" or "files", or ending in "-file(s)": `<file>`,
 * `<files...>`, `<report-file>`. Other names (`<path>` is a URL path) complete nothing.
 */
const FILE_VALUE = /(^|[-_])files?$/i;

/** What a value of this name, with these choices, completes to. */
function completes(name: string, choices: readonly string[] | undefined): Completes {
  if (choices && choices.length > 0) return { choices };
  return FILE_VALUE.test(name) ? 'file' : 'text';
}

/** The first line of a help text, for one-line descriptions. */
function firstLine(text: string): string {
  return (text.split('\n')[0] ?? '').trim();
}

/** The value name in an option's flags: "file" in "--report <file>". */
function valueName(flags: string): string {
  const m = /<([^>]*)>|\[([^\]]*)\]/.exec(flags);
  return (m?.[1] ?? m?.[2] ?? 'value').replace(/\.\.\.$/, '');
}

/**
 * Describes a commander command tree as help shows it: hidden options and commands are left
 * out, and the help option and help command are in.
 */
export function describeCommand(cmd: Command): CommandSpec {
  const help = cmd.createHelp();
  return {
    name: cmd.name(),
    aliases: cmd.aliases(),
    description: firstLine(cmd.summary() || cmd.description()),
    options: help.visibleOptions(cmd).map((o) => {
      const names = [o.short, o.long].filter((n): n is string => Boolean(n));
      const name = valueName(o.flags);
      return {
        names,
        description: firstLine(o.description),
        // An optional value may or may not be the next word, so nothing is completed for it.
        ...(o.required ? { value: { name, completes: completes(name, o.argChoices) } } : {}),
      };
    }),
    arguments: cmd.registeredArguments.map((a) => ({
      name: a.name(),
      completes: completes(a.name(), a.argChoices),
      variadic: a.variadic,
      required: a.required,
    })),
    commands: help.visibleCommands(cmd).map(describeCommand),
  };
}

/** A command with its number in the script and the options it accepts. */
export interface CommandNode {
  /** 0 for the program, then its commands depth first, in help order. */
  id: number;
  spec: CommandSpec;
  /** Names from the program down: ["payouts", "config", "show"]. */
  path: string[];
  /** Its own options, then its parents' that it does not redefine (commander takes them here too). */
  options: OptionSpec[];
  children: CommandNode[];
}

/** Numbers every command of the tree, depth first; the program is the first node. */
export function numberCommands(root: CommandSpec): CommandNode[] {
  const nodes: CommandNode[] = [];
  const visit = (spec: CommandSpec, parent: CommandNode | undefined): CommandNode => {
    const own = new Set(spec.options.flatMap((o) => o.names));
    const inherited = (parent?.options ?? []).filter((o) => !o.names.some((n) => own.has(n)));
    const node: CommandNode = {
      id: nodes.length,
      spec,
      path: [...(parent?.path ?? []), spec.name],
      options: [...spec.options, ...inherited],
      children: [],
    };
    nodes.push(node);
    for (const child of spec.commands) node.children.push(visit(child, node));
    return node;
  };
  visit(root, undefined);
  return nodes;
}

/** A name usable in a shell function name: "payouts" stays, "my-cli" becomes "my_cli". */
export function identifier(name: string): string {
  return name.replace(/[^A-Za-z0-9_]/g, '_');
}

/**
 * Words after `head`, broken into lines of at most 100 columns with a backslash at each break
 * (bash, zsh and fish all continue a line so); continuation lines start with `indent`.
 */
export function wrapWords(head: string, words: readonly string[], indent: string): string {
  const lines: string[] = [];
  let line = head;
  for (const word of words) {
    if (line.length + 1 + word.length > 98 && line.trim() !== '') {
      lines.push(`${line} \\`);
      line = `${indent}${word}`;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  lines.push(line);
  return lines.join('\n');
}

/** The comment at the top of a script: what made it, and the commands by number. */
export function header(shell: string, name: string, nodes: CommandNode[]): string {
  return [
    `# ${shell} completion for ${name}, generated by \`${name} completion ${shell}\` from its commands:`,
    '# regenerate it after an upgrade. The commands by number:',
    ...nodes.map((n) => `#   ${n.id} ${n.path.join(' ')}`),
  ].join('\n');
}
