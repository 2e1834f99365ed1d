import type { Command } from 'commander';
import { bashScript } from './bash.js';
import { fishScript } from './fish.js';
import { powershellScript } from './powershell.js';
import { describeCommand } from './tree.js';
import { zshScript } from './zsh.js';

/** The shells `payouts completion` writes scripts for. */
export type Shell = 'bash' | 'zsh' | 'fish' | 'powershell';

const GENERATORS = {
  bash: bashScript,
  zsh: zshScript,
  fish: fishScript,
  powershell: powershellScript,
} as const;

/** The completion script for a shell, generated from the program's command tree as it is now. */
export function completionScript(shell: Shell, program: Command): string {
  return GENERATORS[shell](describeCommand(program));
}
