import {
  type CommandNode,
  type CommandSpec,
  type Completes,
  header,
  identifier,
  numberCommands,
  wrapWords,
} from './tree.js';

/** A word as bash reads it back: bare when it is plain (no glob or quote characters), else quoted. */
export function bashWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/** The command that adds what a value completes to and starts with `word`; undefined for text. */
function valueAction(f: string, completes: Completes, word: string): string | undefined {
  if (completes === 'text') return undefined;
  if (completes === 'file') return `${f}_files ${word}`;
  return wrapWords(`${f}_add ${word}`, completes.choices.map(bashWord), '        ');
}

/** The helpers every generated function uses. */
function helpers(f: string): string {
  return `# Adds to COMPREPLY the words after the first argument that start with it.
${f}_add() {
  local word="$1" c
  shift
  for c in "$@"; do
    [[ $c == "$word"* ]] && COMPREPLY+=("$c")
  done
}

# Adds the file names that start with $1, marked so readline quotes them and ends folders with /.
${f}_files() {
  local file
  compopt -o filenames 2>/dev/null
  while IFS= read -r file; do COMPREPLY+=("$file"); done < <(compgen -f -- "$1")
}`;
}

/** `<f>_subcommand CMD WORD`: sets the caller's cmd to the number of the subcommand named WORD. */
function subcommandFunction(f: string, nodes: CommandNode[]): string {
  const lines = nodes.flatMap((n) =>
    n.children.map((c) => {
      const names = [c.spec.name, ...c.spec.aliases].map((name) => bashWord(`${n.id}/${name}`));
      return `    ${names.join('|')}) cmd=${c.id} ;;`;
    }),
  );
  return `# Sets cmd (the caller's variable) to the number of subcommand $2 of command $1; fails if none.
${f}_subcommand() {
  case "$1/$2" in
${[...lines, '    *) return 1 ;;'].join('\n')}
  esac
}`;
}

/** `<f>_takes_value CMD OPTION`: whether the option takes the next word as its value. */
function takesValueFunction(f: string, nodes: CommandNode[]): string {
  const lines = nodes.flatMap((n) => {
    const names = n.options.filter((o) => o.value).flatMap((o) => o.names);
    if (names.length === 0) return [];
    return [wrapWords(`    ${n.id}) names=(`, [...names.map(bashWord), ') ;;'], '        ')];
  });
  return `# Whether option $2 of command $1 takes the next word as its value.
${f}_takes_value() {
  local names=() name
  case "$1" in
${lines.join('\n')}
  esac
  for name in "\${names[@]}"; do
    [[ $name == "$2" ]] && return 0
  done
  return 1
}`;
}

/** `<f>_options CMD WORD`: adds the options of the command that start with WORD. */
function optionsFunction(f: string, nodes: CommandNode[]): string {
  const lines = nodes.map((n) =>
    wrapWords(
      `    ${n.id}) ${f}_add "$2"`,
      [...n.options.flatMap((o) => o.names).map(bashWord), ';;'],
      '        ',
    ),
  );
  return `# Adds the options of command $1 (its parents' included) that start with $2.
${f}_options() {
  case "$1" in
${lines.join('\n')}
  esac
}`;
}

/** `<f>_value CMD OPTION WORD`: adds the values of the option that start with WORD. */
function valueFunction(f: string, nodes: CommandNode[]): string {
  const lines = nodes.flatMap((n) =>
    n.options.flatMap((o) => {
      const action = o.value && valueAction(f, o.value.completes, '"$3"');
      if (!action) return [];
      return [`    ${o.names.map((name) => bashWord(`${n.id}/${name}`)).join('|')}) ${action} ;;`];
    }),
  );
  return `# Adds the values of option $2 of command $1 that start with $3.
${f}_value() {
  case "$1/$2" in
${lines.join('\n')}
  esac
}`;
}

/** What may stand at an operand of one command, as one case branch; undefined if nothing. */
function operandBranch(f: string, n: CommandNode): string | undefined {
  const { commands, arguments: args } = n.spec;
  if (commands.length === 0 && args.length === 0) return `    ${n.id}) ${f}_options "$1" "$3" ;;`;
  const actions: string[] = [];
  if (commands.length > 0) {
    const names = commands.map((c) => bashWord(c.name));
    actions.push(wrapWords(`(($2 == 0)) && ${f}_add "$3"`, names, '        '));
  }
  args.forEach((a, i) => {
    const action = valueAction(f, a.completes, '"$3"');
    if (action) actions.push(`(($2 ${a.variadic ? '>=' : '=='} ${i})) && ${action}`);
  });
  if (actions.length === 0) return undefined;
  return `    ${n.id})\n${actions.map((a) => `      ${a}`).join('\n')}\n      ;;`;
}

/** `<f>_operand CMD N WORD`: adds what may stand at operand N (from 0) and starts with WORD. */
function operandFunction(f: string, nodes: CommandNode[]): string {
  const lines = nodes.map((n) => operandBranch(f, n)).filter((l) => l !== undefined);
  return `# Adds what may stand at operand $2 (from 0) of command $1 and starts with $3: its subcommands,
# its arguments' values, or its options when it takes neither.
${f}_operand() {
  case "$1" in
${lines.join('\n')}
  esac
}`;
}

/** The completion function: walks the words before the cursor, then completes the current one. */
function mainFunction(f: string, fn: string): string {
  return `# Completes COMP_WORDS[COMP_CWORD] into COMPREPLY.
${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" cmd=0 npos=0 skip=0 dashdash=0 opt='' word i
  COMPREPLY=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    if ((skip)); then
      # bash splits "--opt=value" at "=": the value is the word after the "=".
      [[ $word == "=" ]] || skip=0
    elif ((!dashdash)) && [[ $word == "--" ]]; then
      dashdash=1
    elif ((!dashdash)) && [[ $word == -* ]]; then
      ${f}_takes_value "$cmd" "$word" && skip=1 && opt="$word"
    elif ((npos > 0)) || ! ${f}_subcommand "$cmd" "$word"; then
      npos=$((npos + 1))
    fi
  done
  if ((skip)); then
    [[ $cur == "=" ]] && cur=''
    ${f}_value "$cmd" "$opt" "$cur"
  elif ((!dashdash)) && [[ $cur == -* ]]; then
    ${f}_options "$cmd" "$cur"
  else
    ${f}_operand "$cmd" "$npos" "$cur"
  fi
  return 0
}`;
}

/** The bash completion script for a command tree: `complete -F` with one function per question. */
export function bashScript(root: CommandSpec): string {
  const nodes = numberCommands(root);
  const f = `__${identifier(root.name)}`;
  const fn = `_${identifier(root.name)}`;
  return `${[
    header('bash', root.name, nodes),
    helpers(f),
    subcommandFunction(f, nodes),
    takesValueFunction(f, nodes),
    optionsFunction(f, nodes),
    valueFunction(f, nodes),
    operandFunction(f, nodes),
    mainFunction(f, fn),
    `complete -F ${fn} ${bashWord(root.name)}`,
  ].join('\n\n')}\n`;
}
