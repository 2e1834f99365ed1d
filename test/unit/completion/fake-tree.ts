import type { CommandSpec, OptionSpec } from '../../../src/core/completion/tree.js';

const help: OptionSpec = { names: ['-h', '--help'], description: 'display help for command' };

/** A small command tree with every kind of value, and text that needs quoting in each shell. */
export const FAKE_TREE: CommandSpec = {
  name: 'tool',
  aliases: [],
  description: 'a tool',
  options: [
    { names: ['-v', '--verbose'], description: 'say more' },
    {
      names: ['--profile'],
      description: 'profile to use [default: "main"]',
      value: { name: 'name', completes: 'text' },
    },
    help,
  ],
  arguments: [],
  commands: [
    {
      name: 'send',
      aliases: ['s'],
      description: "send files; it's quick",
      options: [
        {
          names: ['-f', '--format'],
          description: 'input format',
          value: { name: 'format', completes: { choices: ['csv', 'json'] } },
        },
        {
          names: ['--report'],
          description: 'write a report',
          value: { name: 'file', completes: 'file' },
        },
        help,
      ],
      arguments: [{ name: 'files', completes: 'file', variadic: true, required: true }],
      commands: [],
    },
    {
      name: 'config',
      aliases: [],
      description: 'settings',
      options: [help],
      arguments: [],
      commands: [
        {
          name: 'show',
          aliases: [],
          description: 'show them',
          options: [help],
          arguments: [],
          commands: [],
        },
        {
          name: 'set',
          aliases: [],
          description: 'set one',
          options: [
            {
              names: ['--mode'],
              description: 'how: a:b or [c]',
              value: { name: 'mode', completes: { choices: ['fast lane', "it's", 'slow'] } },
            },
            help,
          ],
          arguments: [
            {
              name: 'key',
              completes: { choices: ['colour', 'size'] },
              variadic: false,
              required: true,
            },
            { name: 'value', completes: 'text', variadic: false, required: false },
          ],
          commands: [],
        },
      ],
    },
  ],
};

/** Every command name and option name in a tree. */
export function allNames(spec: CommandSpec): { commands: string[]; options: string[] } {
  const commands: string[] = [];
  const options: string[] = [];
  const visit = (c: CommandSpec) => {
    commands.push(c.name);
    options.push(...c.options.flatMap((o) => o.names));
    c.commands.forEach(visit);
  };
  visit(spec);
  return { commands, options: [...new Set(options)] };
}
