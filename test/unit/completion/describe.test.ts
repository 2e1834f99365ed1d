import { Argument, Command, Option } from 'commander';
import { describe, expect, it } from 'vitest';
import { describeCommand, numberCommands } from '../../../src/core/completion/tree.js';

/** A small commander program with each kind of option and argument. */
function program(): Command {
  const root = new Command('tool').option('--profile <name>', 'profile to use');
  root.addOption(new Option('--no-color', 'no colours').hideHelp());
  root
    .command('send')
    .alias('s')
    .description('send files\nSecond line of the description.')
    .argument('<files...>', 'input files')
    .addOption(new Option('--format <format>', 'input format').choices(['csv', 'json']))
    .option('--report <file>', 'write a report')
    .option('--prefix <path>', 'URL path prefix')
    .option('--map <field=Header,...>', 'header names')
    .option('--allow <CODE[:DIGITS]>', 'extra codes')
    .option('--color [when]', 'colours: an optional value')
    .option('-y, --yes', 'no questions');
  root.command('hidden-one', { hidden: true });
  root.command('pick').addArgument(new Argument('[shell]').choices(['bash', 'zsh']));
  return root;
}

describe('describeCommand', () => {
  const tree = describeCommand(program());
  const send = tree.commands.find((c) => c.name === 'send')!;
  const option = (name: string) => send.options.find((o) => o.names.includes(name));

  it('keeps what help shows: hidden commands and options out, the help option and command in', () => {
    expect(tree.commands.map((c) => c.name)).toEqual(['send', 'pick', 'help']);
    expect(tree.options.map((o) => o.names)).toEqual([['--profile'], ['-h', '--help']]);
    expect(send.aliases).toEqual(['s']);
    expect(send.description).toBe('send files');
  });

  it('reads choices, and file names for values and arguments named file(s)', () => {
    expect(option('--format')!.value).toEqual({
      name: 'format',
      completes: { choices: ['csv', 'json'] },
    });
    expect(option('--report')!.value).toEqual({ name: 'file', completes: 'file' });
    expect(option('--prefix')!.value).toEqual({ name: 'path', completes: 'text' });
    expect(option('--map')!.value?.name).toBe('field=Header,');
    expect(option('--allow')!.value?.name).toBe('CODE[:DIGITS]');
    expect(send.arguments).toEqual([
      { name: 'files', completes: 'file', variadic: true, required: true },
    ]);
    const pick = tree.commands.find((c) => c.name === 'pick')!;
    expect(pick.arguments[0]).toMatchObject({
      completes: { choices: ['bash', 'zsh'] },
      required: false,
    });
  });

  it('gives flags and optional values no value to complete', () => {
    expect(option('-y')).toEqual({ names: ['-y', '--yes'], description: 'no questions' });
    expect(option('--color')!.value).toBeUndefined();
  });
});

describe('numberCommands', () => {
  it("numbers depth first and gives each command its parents' options after its own", () => {
    const nodes = numberCommands(describeCommand(program()));
    expect(nodes.map((n) => `${n.id} ${n.path.join(' ')}`)).toEqual([
      '0 tool',
      '1 tool send',
      '2 tool pick',
      '3 tool help',
    ]);
    expect(nodes[1]!.options.flatMap((o) => o.names).slice(-3)).toEqual([
      '-h',
      '--help',
      '--profile',
    ]);
    // The help option is its own, not also its parent's.
    expect(nodes[1]!.options.filter((o) => o.names.includes('--help'))).toHaveLength(1);
  });
});
