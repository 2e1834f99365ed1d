import {
  type CommandNode,
  type CommandSpec,
  type Completes,
  header,
  identifier,
  numberCommands,
  type OptionSpec,
  wrapWords,
} from './tree.js';

/** Text in single quotes for fish, where only \ and ' are special. */
export function fishQuote(text: string): string {
  return `'${text.replace(/[\\']/g, '\\$&')}'`;
}

/** A word as fish reads it back: bare when it is plain, else quoted. */
function fishWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : fishQuote(text);
}

/** Candidates for `complete -a`, which fish splits into words and expands like a command line. */
function candidates(words: readonly string[]): string {
  return fishQuote(words.map((w) => w.replace(/[^\w@%+=:,./-]/g, '\\$&')).join(' '));
}

const INDENT = '                ';

/** `<f>_subcommand CMD WORD`: prints the number of the subcommand named WORD. */
function subcommandFunction(f: string, nodes: CommandNode[]): string {
  const branches = nodes
    .filter((n) => n.children.length > 0)
    .map((n) => {
      const pairs = n.children.flatMap((c) =>
        [c.spec.name, ...c.spec.aliases].map((name): [string, number] => [name, c.id]),
      );
      const names = wrapWords(
        '            set names',
        pairs.map(([name]) => fishWord(name)),
        INDENT,
      );
      const ids = wrapWords(
        '            set ids',
        pairs.map(([, id]) => String(id)),
        INDENT,
      );
      return `        case ${n.id}\n${names}\n${ids}`;
    });
  return `# Prints the number of the subcommand named $word of command $cmd; fails if there is none.
function ${f}_subcommand --argument-names cmd word
    set -l names
    set -l ids
    switch $cmd
${branches.join('\n')}
    end
    contains -- "$word" $names; or return 1
    echo $ids[(contains -i -- "$word" $names)]
end`;
}

/** `<f>_takes_value CMD OPTION`: whether the option takes the next word as its value. */
function takesValueFunction(f: string, nodes: CommandNode[]): string {
  const branches = nodes.flatMap((n) => {
    const names = n.options.filter((o) => o.value).flatMap((o) => o.names);
    if (names.length === 0) return [];
    const test = wrapWords('            contains -- "$word"', names.map(fishWord), INDENT);
    return [`        case ${n.id}\n${test}`];
  });
  return `# Whether option $word of command $cmd takes the next word as its value.
function ${f}_takes_value --argument-names cmd word
    switch $cmd
${[...branches, "        case '*'\n            return 1"].join('\n')}
    end
end`;
}

/** `<f>_state` and `<f>_at`: where the cursor is in the command tree, for `complete -n`. */
function positionFunctions(f: string): string {
  return `# Prints how many operands come before the cursor, then the number of the command they belong to.
function ${f}_state
    set -l cmd 0
    set -l npos 0
    set -l skip 0
    set -l dashdash 0
    set -l next
    set -l words (commandline -opc)
    set -e words[1]
    for word in $words
        if test $skip = 1
            set skip 0
        else if test $dashdash = 0; and test "$word" = "--"
            set dashdash 1
        else if test $dashdash = 0; and string match -q -- '-*' "$word"
            ${f}_takes_value $cmd "$word"; and set skip 1
        else if test $npos = 0; and set next (${f}_subcommand $cmd "$word")
            set cmd $next
        else
            set npos (math $npos + 1)
        end
    end
    echo $npos
    echo $cmd
end

# Whether command $argv[1] is being completed; with $argv[2] (N, or N+ for N or more), whether
# that many operands come before the cursor.
function ${f}_at
    set -l state (${f}_state)
    test "$state[2]" = "$argv[1]"; or return 1
    set -q argv[2]; or return 0
    set -l n (string replace -- + '' $argv[2])
    if test "$n" = "$argv[2]"
        test "$state[1]" -eq $n
    else
        test "$state[1]" -ge $n
    end
end`;
}

/** The flags of `complete` for what a value completes to. */
function valueFlags(completes: Completes): string {
  if (completes === 'file') return '-r -F';
  if (completes === 'text') return '-x';
  return `-x -a ${candidates(completes.choices)}`;
}

/** One `complete` line for an option of a command. */
function optionLine(head: string, o: OptionSpec): string {
  const names = o.names.map((n) =>
    n.startsWith('--') ? `-l ${fishWord(n.slice(2))}` : `-s ${fishWord(n.slice(1))}`,
  );
  const value = o.value ? ` ${valueFlags(o.value.completes)}` : '';
  return `${head} ${names.join(' ')}${value} -d ${fishQuote(o.description)}`;
}

/** The `complete` lines of one command: its subcommands, options and arguments. */
function commandLines(c: string, f: string, n: CommandNode): string[] {
  const at = (operands?: string) =>
    `complete -c ${c} -n ${fishQuote(`${f}_at ${n.id}${operands ? ` ${operands}` : ''}`)}`;
  const lines = [`# ${n.path.join(' ')}`];
  for (const child of n.children)
    lines.push(
      `${at('0')} -a ${candidates([child.spec.name])} -d ${fishQuote(child.spec.description)}`,
    );
  for (const o of n.options) lines.push(optionLine(at(), o));
  n.spec.arguments.forEach((a, i) => {
    if (a.completes === 'text' || n.children.length > 0) return;
    const operands = `${i}${a.variadic ? '+' : ''}`;
    lines.push(
      a.completes === 'file'
        ? `${at(operands)} -F`
        : `${at(operands)} -a ${candidates(a.completes.choices)}`,
    );
  });
  return lines;
}

/** The fish completion script for a command tree: `complete` lines guarded by where the cursor is. */
export function fishScript(root: CommandSpec): string {
  const nodes = numberCommands(root);
  const f = `__${identifier(root.name)}`;
  const c = fishWord(root.name);
  return `${[
    header('fish', root.name, nodes),
    subcommandFunction(f, nodes),
    takesValueFunction(f, nodes),
    positionFunctions(f),
    `# File names only where a value or an argument is a file.\ncomplete -c ${c} -f`,
    ...nodes.map((n) => commandLines(c, f, n).join('\n')),
  ].join('\n\n')}\n`;
}
