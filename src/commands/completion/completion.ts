import { Argument, type Command } from 'commander';
import type { Runtime } from '../../context.js';
import type { Shell } from '../../core/completion/script.js';
import { defineAction, type ExitSink } from '../command.js';

const SHELLS: readonly Shell[] = ['bash', 'zsh', 'fish', 'powershell'];

/** Registers `payouts completion`. */
export function registerCompletion(program: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = program
    .command('completion')
    .description('print the shell completion script for bash, zsh, fish or PowerShell')
    .addArgument(new Argument('<shell>', 'bash, zsh, fish or powershell').choices(SHELLS))
    .addHelpText(
      'after',
      `
Install, then open a new shell:
  bash, with the bash-completion package:
    $ payouts completion bash > ~/.local/share/bash-completion/completions/payouts
  bash without it, a line in ~/.bashrc:
    $ source <(payouts completion bash)
  zsh, then in ~/.zshrc, before compinit: fpath=(~/.zfunc $fpath)
    $ mkdir -p ~/.zfunc && payouts completion zsh > ~/.zfunc/_payouts
  fish:
    $ payouts completion fish > ~/.config/fish/completions/payouts.fish
  PowerShell, a line in $PROFILE:
    $ payouts completion powershell | Out-String | Invoke-Expression

The script completes commands, options, their choices and file names. It is made from this
version's commands: write it again after an upgrade.
With --json: {"shell": ..., "script": ...}.
`,
    );
  defineAction<[Shell], object>(cmd, runtime, sink, async (ctx, _flags, shell) => {
    const { completionScript } = await import('../../core/completion/script.js');
    const script = completionScript(shell, program);
    if (ctx.output.json) ctx.output.document({ shell, script });
    else ctx.output.print(script.replace(/\n$/, ''));
    return 0;
  });
}
