import { type Command, Option } from 'commander';
import type { Runtime } from '../../context.js';
import { UsageError } from '../../errors.js';
import type { InputFormat } from '../../input/index.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Registers `payouts template`. */
export function registerTemplate(program: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = program
    .command('template')
    .description('print a ready-to-fill input file with the documented columns')
    .addOption(
      new Option('--format <format>', 'template format')
        .choices(['csv', 'json', 'ndjson', 'xlsx'])
        .default('csv'),
    )
    .addHelpText(
      'after',
      examples(
        'payouts template > run.csv',
        'payouts template --format json > run.json',
        'payouts template --format xlsx > run.xlsx   # reference, amount, recipient as Text',
      ),
    );
  defineAction<[], { format: InputFormat }>(cmd, runtime, sink, async (ctx, flags) => {
    const { templateText, templateWorkbook } = await import('../../input/index.js');
    if (flags.format === 'xlsx') {
      const bytes = templateWorkbook();
      if (ctx.output.json) {
        ctx.output.document({
          format: 'xlsx',
          encoding: 'base64',
          template: bytes.toString('base64'),
        });
      } else if (ctx.output.stdoutIsTerminal) {
        throw new UsageError(
          'a workbook is binary and would garble the terminal: redirect it to a file, such as payouts template --format xlsx > run.xlsx',
        );
      } else await ctx.output.printBytes(bytes);
      return 0;
    }
    const text = templateText(flags.format);
    if (ctx.output.json) ctx.output.document({ format: flags.format, template: text });
    else ctx.output.print(text.replace(/\n$/, ''));
    return 0;
  });
}
