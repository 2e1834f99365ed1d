import {
  type ArgumentSpec,
  type CommandNode,
  type CommandSpec,
  type Completes,
  header,
  identifier,
  numberCommands,
  type OptionSpec,
} from './tree.js';

/** Text in single quotes for zsh. */
export function zshQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** A word as zsh reads it back: bare when it is plain, else quoted. */
function zshWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : zshQuote(text);
}

/** Text inside an _arguments spec: a description in [...] or a message between colons. */
function specText(text: string): string {
  return text.replace(/[\\[\]:]/g, '\\$&');
}

/** The action of a value: its choices, file names, or only its name shown (a single space). */
function action(completes: Completes): string {
  if (completes === 'text') return ' ';
  if (completes === 'file') return '_files';
  return `(${completes.choices.map((c) => c.replace(/[^\w@%+=,./-]/g, '\\$&')).join(' ')})`;
}

/**
 * One option as _arguments specs. A value may be repeated (commander takes the last, or
 * collects them); a flag's names exclude each other once given.
 */
function optionSpec(o: OptionSpec): string {
  const forms = o.names.map((n) => (o.value ? `${n}${n.startsWith('--') ? '=' : '+'}` : n));
  const value = o.value ? `:${specText(o.value.name)}:${action(o.value.completes)}` : '';
  const rest = `[${specText(o.description)}]${value}`;
  const prefix = o.value ? '*' : forms.length > 1 ? `(${o.names.join(' ')})` : '';
  if (forms.length === 1) return zshQuote(`${prefix}${forms[0]}${rest}`);
  return `${prefix === '' ? '' : zshQuote(prefix)}{${forms.map(zshWord).join(',')}}${zshQuote(rest)}`;
}

/** One positional argument as an _arguments spec: "1:shell:(bash zsh)", "*:files:_files". */
function argumentSpec(a: ArgumentSpec, index: number): string {
  const position = a.variadic ? '*' : `${index + 1}${a.required ? '' : ':'}`;
  return zshQuote(`${position}:${specText(a.name)}:${action(a.completes)}`);
}

/** A command that has subcommands: options, then a subcommand, then that subcommand's words. */
function parentFunction(fn: string, n: CommandNode, specs: string[]): string {
  const entries = n.children.map((c) =>
    zshQuote(`${c.spec.name.replaceAll(':', '\\:')}:${c.spec.description}`),
  );
  const branches = n.children.map(
    (c) =>
      `        ${[c.spec.name, ...c.spec.aliases].map(zshQuote).join('|')}) ${fn}_${c.id} && ret=0 ;;`,
  );
  return `# ${n.path.join(' ')}
${n.id === 0 ? fn : `${fn}_${n.id}`}() {
  local curcontext="$curcontext" state line ret=1
  local -a commands
  _arguments -s -S -C \\
${[...specs, "'1: :->command'", "'*:: :->argument'"].map((s) => `    ${s}`).join(' \\\n')} && ret=0
  case $state in
    command)
      commands=(
${entries.map((e) => `        ${e}`).join('\n')}
      )
      _describe -t commands ${zshQuote(`${n.path.join(' ')} command`)} commands && ret=0
      ;;
    argument)
      case $words[1] in
${branches.join('\n')}
      esac
      ;;
  esac
  return ret
}`;
}

/** One function per command: _arguments with its options and arguments, or its subcommands. */
function commandFunction(fn: string, n: CommandNode): string {
  const specs = n.options.map(optionSpec);
  if (n.children.length > 0) return parentFunction(fn, n, specs);
  specs.push(...n.spec.arguments.map(argumentSpec));
  const lines = specs.length === 0 ? '' : ` \\\n${specs.map((s) => `    ${s}`).join(' \\\n')}`;
  return `# ${n.path.join(' ')}
${n.id === 0 ? fn : `${fn}_${n.id}`}() {
  _arguments -s -S${lines}
}`;
}

/**
 * The zsh completion script for a command tree. Loaded from $fpath it is the body of the
 * completion function; sourced (after compinit) it registers that function with compdef.
 */
export function zshScript(root: CommandSpec): string {
  const nodes = numberCommands(root);
  const fn = `_${identifier(root.name)}`;
  return `${[
    `#compdef ${root.name}`,
    header('zsh', root.name, nodes),
    ...nodes
      .slice(1)
      .reverse()
      .map((n) => commandFunction(fn, n)),
    commandFunction(fn, nodes[0]!),
    `if [[ $funcstack[1] == ${fn} ]]; then
  ${fn} "$@"
else
  compdef ${fn} ${zshQuote(root.name)}
fi`,
  ].join('\n\n')}\n`;
}
