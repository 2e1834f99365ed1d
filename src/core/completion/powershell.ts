import {
  type CommandNode,
  type CommandSpec,
  type Completes,
  header,
  numberCommands,
  type OptionSpec,
} from './tree.js';

/**
 * Text in single quotes for PowerShell, where a quote is doubled. PowerShell also takes the
 * typographic single quotes (U+2018 to U+201B) as quotes, so they are doubled too.
 */
export function psQuote(text: string): string {
  return `'${text.replace(/['\u2018-\u201b]/g, '$&$&')}'`;
}

/** A list of quoted strings as a PowerShell array. */
function psArray(words: readonly string[]): string {
  return `@(${words.map(psQuote).join(', ')})`;
}

/** What a value completes to, as the script's data: 'file', 'text' or an array of choices. */
function psCompletes(completes: Completes): string {
  if (completes === 'file' || completes === 'text') return psQuote(completes);
  return psArray(completes.choices);
}

/** One option as a hashtable: its names, description and what its value completes to. */
function psOption(o: OptionSpec): string {
  const value = o.value ? psCompletes(o.value.completes) : '$null';
  return `@{ names = ${psArray(o.names)}; desc = ${psQuote(o.description)}; value = ${value} }`;
}

/**
 * One command as a hashtable entry: subcommands by name (aliases too) and in order, options
 * and arguments. Lists hold hashtables, which PowerShell never unrolls into their parent list.
 */
function psNode(n: CommandNode): string {
  const sub = n.children.flatMap((c) =>
    [c.spec.name, ...c.spec.aliases].map((name) => `${psQuote(name)} = ${c.id}`),
  );
  const subs = n.children.map(
    (c) => `@{ name = ${psQuote(c.spec.name)}; desc = ${psQuote(c.spec.description)} }`,
  );
  const args = n.spec.arguments.map(
    (a) => `@{ value = ${psCompletes(a.completes)}; variadic = $${a.variadic} }`,
  );
  const list = (items: string[]) =>
    items.length
      ? `@(\n${items.map((i) => `                ${i}`).join(',\n')}\n            )`
      : '@()';
  return [
    `        ${n.id} = @{ # ${n.path.join(' ')}`,
    `            sub = ${sub.length ? `@{ ${sub.join('; ')} }` : '@{}'}`,
    `            subs = ${list(subs)}`,
    `            opts = ${list(n.options.map(psOption))}`,
    `            args = ${list(args)}`,
    '        }',
  ].join('\n');
}

/**
 * The PowerShell completion script for a command tree: the tree as data, and one native
 * argument completer that walks the words before the cursor as commander parses them. Where
 * a file name is wanted it returns nothing, and PowerShell completes paths itself.
 */
export function powershellScript(root: CommandSpec): string {
  const nodes = numberCommands(root);
  return `${header('powershell', root.name, nodes)}

Register-ArgumentCompleter -Native -CommandName ${psQuote(root.name)} -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)
    # The commands by number: subcommands, options and arguments of each.
    $tree = @{
${nodes.map(psNode).join('\n')}
    }
    # The words before the one being completed, without the command's own name.
    $words = @($commandAst.CommandElements |
        Where-Object { $_.Extent.EndOffset -lt $cursorPosition } |
        ForEach-Object { $_.Extent.Text } | Select-Object -Skip 1)
    $cmd = 0; $npos = 0; $dashdash = $false; $pending = $null
    foreach ($word in $words) {
        if ($null -ne $pending) { $pending = $null; continue }
        if (-not $dashdash -and $word -eq '--') { $dashdash = $true; continue }
        if (-not $dashdash -and $word.StartsWith('-')) {
            $opt = @($tree[$cmd].opts | Where-Object { $_.names -ccontains $word })[0]
            if ($null -ne $opt -and $null -ne $opt.value) { $pending = $opt }
            continue
        }
        if ($npos -eq 0 -and $tree[$cmd].sub.ContainsKey($word)) { $cmd = $tree[$cmd].sub[$word]; continue }
        $npos++
    }
    $node = $tree[$cmd]
    $results = [System.Collections.Generic.List[object]]::new()
    $offer = {
        param($text, $tip)
        if ($text.StartsWith($wordToComplete)) {
            $shown = if ($text -match '[\\s''"\`$#@(){};,|&<>]') { "'" + ($text -replace "'", "''") + "'" } else { $text }
            $results.Add([System.Management.Automation.CompletionResult]::new($shown, $text, 'ParameterValue', $tip))
        }
    }
    $value = $null
    if ($null -ne $pending) {
        $value = $pending.value
    } elseif ($dashdash -or -not $wordToComplete.StartsWith('-')) {
        if ($npos -eq 0) { foreach ($s in $node.subs) { & $offer $s.name $s.desc } }
        if ($node.subs.Count -eq 0) {
            for ($i = 0; $i -lt $node.args.Count; $i++) {
                if ($i -eq $npos -or ($node.args[$i].variadic -and $i -lt $npos)) { $value = $node.args[$i].value }
            }
        }
    }
    $bare = $npos -eq 0 -and $node.subs.Count -eq 0 -and $node.args.Count -eq 0
    if ($null -eq $pending -and -not $dashdash -and ($wordToComplete.StartsWith('-') -or $bare)) {
        foreach ($o in $node.opts) { foreach ($n in $o.names) { & $offer $n $o.desc } }
    }
    if ($value -is [array]) { foreach ($c in $value) { & $offer $c $c } }
    # A file name: nothing is returned, and PowerShell completes paths itself.
    if ($value -is [string] -and $value -eq 'file') { return }
    $results
}
`;
}
