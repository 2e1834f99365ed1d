import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bashScript } from '../../../src/core/completion/bash.js';
import { fishScript } from '../../../src/core/completion/fish.js';
import { powershellScript, psQuote } from '../../../src/core/completion/powershell.js';
import { zshScript } from '../../../src/core/completion/zsh.js';
import {
  bashComplete,
  hasProgram,
  removeTempDirs,
  tempDir,
  writeScript,
} from '../../helpers/bash-run.js';
import { allNames, FAKE_TREE } from '../../unit/completion/fake-tree.js';

afterAll(removeTempDirs);

const { commands, options } = allNames(FAKE_TREE);

/** How a script names an option: as typed in bash and zsh, with -s or -l in fish. */
const typed = (name: string) => new RegExp(`[\\s'{,*]${name}[\\s'=+,}]`);
const fishName = (name: string) =>
  name.startsWith('--') ? ` -l ${name.slice(2)} ` : ` -s ${name.slice(1)} `;

describe.each([
  ['bash', bashScript, typed],
  ['zsh', zshScript, typed],
  ['fish', fishScript, fishName],
  ['powershell', powershellScript, typed],
])('the %s script of a small tree', (_shell, generate, option) => {
  const script = generate(FAKE_TREE);

  it('names every command and option', () => {
    for (const name of commands) expect(script).toContain(name);
    for (const name of options) expect(script).toMatch(option(name));
  });

  it('offers the choices of options and arguments', () => {
    for (const choice of ['csv', 'json', 'slow', 'colour', 'size'])
      expect(script).toContain(choice);
  });

  it('contains no tab or other control character but line breaks', () => {
    expect(script).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
  });
});

describe('bash script text', () => {
  const script = bashScript(FAKE_TREE);
  it('completes file names for file values and arguments, and only there', () => {
    expect(script).toContain('1/--report) __tool_files "$3" ;;');
    expect(script).toContain('(($2 >= 0)) && __tool_files "$3"');
    expect(script.match(/__tool_files "\$3"/g)).toHaveLength(2);
  });
  it('registers the function for the program', () => {
    expect(script.trimEnd().split('\n').at(-1)).toBe('complete -F _tool tool');
  });
});

describe('zsh script text', () => {
  const script = zshScript(FAKE_TREE);
  it('starts with #compdef and describes values, choices and files for _arguments', () => {
    expect(script.startsWith('#compdef tool\n')).toBe(true);
    expect(script).toContain(`'*'{-f+,--format=}'[input format]:format:(csv json)'`);
    expect(script).toContain(`'*--report=[write a report]:file:_files'`);
    expect(script).toContain(`'*:files:_files'`);
    expect(script).toContain(`'1:key:(colour size)'`);
    expect(script).toContain(`'2::value: '`);
  });
  it('escapes what _arguments and the shell would read otherwise', () => {
    expect(script).toContain(`'*--profile=[profile to use \\[default\\: "main"\\]]:name: '`);
    expect(script).toContain(`:mode:(fast\\ lane it\\'\\''s slow)'`);
    expect(script).toContain(`'send:send files; it'\\''s quick'`);
  });
  it('lets a flag be given once and its names exclude each other', () => {
    expect(script).toContain(`'(-v --verbose)'{-v,--verbose}'[say more]'`);
  });
});

describe('fish script text', () => {
  const script = fishScript(FAKE_TREE);
  it('offers no file names unless a value or argument is a file', () => {
    expect(script).toContain('complete -c tool -f\n');
    expect(script).toContain(
      "complete -c tool -n '__tool_at 1' -l report -r -F -d 'write a report'",
    );
    expect(script).toContain("complete -c tool -n '__tool_at 1 0+' -F\n");
    expect(script.match(/ -F\b/g)).toHaveLength(2);
  });
  it('gives choices and subcommands with their descriptions, quoted for fish', () => {
    expect(script).toContain(
      "complete -c tool -n '__tool_at 1' -s f -l format -x -a 'csv json' -d 'input format'",
    );
    expect(script).toContain("-a 'send' -d 'send files; it\\'s quick'");
    expect(script).toContain("-x -a 'fast\\\\ lane it\\\\\\'s slow'");
    expect(script).toContain("complete -c tool -n '__tool_at 4 0' -a 'colour size'");
  });
});

describe('PowerShell script text', () => {
  const script = powershellScript(FAKE_TREE);
  it('registers one native completer for the program, holding the tree', () => {
    expect(script).toContain(
      "Register-ArgumentCompleter -Native -CommandName 'tool' -ScriptBlock {",
    );
    expect(script.match(/Register-ArgumentCompleter/g)).toHaveLength(1);
  });
  it('maps subcommands and aliases to their numbers, and says what values complete to', () => {
    expect(script).toContain("sub = @{ 'send' = 1; 's' = 1; 'config' = 2 }");
    expect(script).toContain(
      "@{ names = @('-f', '--format'); desc = 'input format'; value = @('csv', 'json') }",
    );
    expect(script).toContain("@{ names = @('--report'); desc = 'write a report'; value = 'file' }");
    expect(script).toContain("@{ value = 'file'; variadic = $true }");
    expect(script).toContain("@{ name = 'send'; desc = 'send files; it''s quick' }");
  });
  it('doubles single quotes, the typographic ones too', () => {
    expect(psQuote("it's")).toBe("'it''s'");
    expect(psQuote('it\u2019s')).toBe("'it\u2019\u2019s'");
    expect(script).toContain("value = @('fast lane', 'it''s', 'slow')");
  });
});

describe.runIf(hasProgram('pwsh'))('the PowerShell script in pwsh', () => {
  it('completes subcommands, choices and options', () => {
    const path = writeScript(powershellScript(FAKE_TREE), 'tool.ps1');
    const complete = (line: string) => {
      const command = `. '${path}'; (TabExpansion2 -inputScript '${line}' -cursorColumn ${line.length}).CompletionMatches | ForEach-Object { $_.CompletionText }`;
      const r = spawnSync('pwsh', ['-NoProfile', '-NonInteractive', '-Command', command], {
        encoding: 'utf8',
      });
      expect(r.stderr).toBe('');
      return r.stdout
        .split(/\r?\n/)
        .filter((l) => l !== '')
        .sort();
    };
    expect(complete('tool ')).toEqual(['config', 'send']);
    expect(complete('tool s --f')).toEqual(['--format']);
    expect(complete('tool send --format ')).toEqual(['csv', 'json']);
    expect(complete('tool config set ')).toEqual(['colour', 'size']);
  });
});

describe('the bash script of a small tree, run in bash', () => {
  let script = '';
  let cwd = '';
  beforeAll(() => {
    script = writeScript(bashScript(FAKE_TREE), 'tool.bash');
    cwd = tempDir();
    writeFileSync(join(cwd, 'a run.csv'), '');
    writeFileSync(join(cwd, 'b.json'), '');
    mkdirSync(join(cwd, 'dir'));
  });
  const complete = (...words: string[]) => bashComplete(script, '_tool', ['tool', ...words], cwd);

  it('follows aliases and nested commands', () => {
    expect(complete('s', '--f')).toEqual(['--format']);
    expect(complete('config', '')).toEqual(['set', 'show']);
    expect(complete('config', 'set', '')).toEqual(['colour', 'size']);
    expect(complete('config', 'set', 'size', '')).toEqual([]);
  });

  it('returns choices with spaces and quotes as single words', () => {
    expect(complete('config', 'set', '--mode', '')).toEqual(['fast lane', "it's", 'slow']);
    expect(complete('config', 'set', '--mode', 'f')).toEqual(['fast lane']);
  });

  it('completes file names with spaces for file arguments and values', () => {
    expect(complete('send', '')).toEqual(['a run.csv', 'b.json', 'dir']);
    expect(complete('send', '--report', 'a')).toEqual(['a run.csv']);
    expect(complete('send', '-f', 'json', 'b')).toEqual(['b.json']);
  });

  it("offers a command its parents' options, and the options of a command without operands", () => {
    expect(complete('config', 'show', '--')).toEqual(['--help', '--profile', '--verbose']);
    expect(complete('config', 'show', '')).toEqual([
      '--help',
      '--profile',
      '--verbose',
      '-h',
      '-v',
    ]);
  });

  it('takes the word after an option with a value as its value, not as a command', () => {
    expect(complete('--profile', 'send', '')).toEqual(['config', 'send']);
    expect(complete('--profile', 'x', 'send', 'a')).toEqual(['a run.csv']);
  });
});

describe.runIf(hasProgram('zsh'))('the zsh script in zsh', () => {
  it('parses', () => {
    const r = spawnSync('zsh', ['-n', writeScript(zshScript(FAKE_TREE), '_tool')], {
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});

describe.runIf(hasProgram('fish'))('the fish script in fish', () => {
  const fish = (line: string) => {
    const path = writeScript(fishScript(FAKE_TREE), 'tool.fish');
    const r = spawnSync('fish', ['--no-config', '-c', `source ${path}; complete -C '${line}'`], {
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    return r.stdout
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => l.split('\t')[0])
      .sort();
  };
  it('completes subcommands, aliases, choices and arguments', () => {
    expect(fish('tool ')).toEqual(['config', 'send']);
    expect(fish('tool s --f')).toEqual(['--format']);
    expect(fish('tool send --format ')).toEqual(['csv', 'json']);
    expect(fish('tool config set ')).toEqual(['colour', 'size']);
    expect(fish('tool config set --mode ')).toEqual(['fast lane', "it's", 'slow']);
  });
});
