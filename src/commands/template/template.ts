import { type Command, Option } from 'commander';
import type { Runtime } from '../../context.js';
import type { InputFormat } from '../../input/index.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Registers `payouts template`. */
export function registerTemplate(program: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = program
    .command('template')
    .description('print a ready-to-fill input file with the documented columns')
    .addOption(
      new Option('--format <format>', 'template format')
        .choices(['csv', 'json', 'ndjson'])
        .default('csv'),
    )
    .addHelpText(
      'after',
      examples('payouts template > run.csv', 'payouts template --format json > run.json'),
    );
  defineAction<[], { format: InputFormat }>(cmd, runtime, sink, async (ctx, flags) => {
    const { templateText } = await import('../../input/index.js');
    const text = templateText(flags.format);
    if (ctx.output.json) ctx.output.printJson({ format: flags.format, template: text });
    else ctx.output.print(text.replace(/\n$/, ''));
    return 0;
  });
}
