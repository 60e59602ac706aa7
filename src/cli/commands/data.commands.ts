import { isOpenTinkerError } from '@opentinker/client';
import type { DatasetReport } from '@opentinker/client';
import { Command } from 'commander';
import { existsSync, statSync } from 'node:fs';
import { CliError, EXIT } from './cli-error';
import { clientAction, intOption, withCommonOptions } from './command-kit';
import { knownEnvironments } from './envs.commands';
import { formatAge, formatBytes, printJson, printLine, table } from './output';

/**
 * `data upload|list|preview|delete`: datasets on the server (`data prepare`, which converts files
 * locally, is registered with the server commands). Returns the commands it added.
 *
 * @example
 * ```bash
 * opentinker data upload train.parquet --env math --name gsm8k-train
 * opentinker data list
 * opentinker data preview 3f2a9c1e-…  --limit 5
 * opentinker train math environment.dataset=3f2a9c1e-…
 * ```
 */
export function registerDataCommands(program: Command): Command[] {
  const data = program.commands.find((c) => c.name() === 'data') ?? program.command('data').description('Datasets');
  const added: Command[] = [];

  added.push(
    withCommonOptions(
      data
        .command('upload')
        .description("Upload a JSONL or parquet file (streamed), checked row by row against the environment's expected columns")
        .argument('<file>', '.jsonl/.ndjson or .parquet file'),
    )
      .requiredOption('--env <id>', 'environment the rows are for, e.g. math')
      .option('--name <name>', 'a name to recognise it by (default: the file name)')
      .option('--format <format>', 'jsonl or parquet (default: from the file extension)')
      .option('--strict', 'refuse the file if any row is bad')
      .action(
        clientAction<{ env: string; name?: string; format?: string; strict?: boolean }, [string]>(async ({ client, json, options }, file) => {
          if (!existsSync(file) || !statSync(file).isFile()) throw new CliError(`No such file: ${file}`, EXIT.USAGE, undefined, 'file');
          if (options.format !== undefined && options.format !== 'jsonl' && options.format !== 'parquet') {
            throw new CliError(`--format must be jsonl or parquet, got "${options.format}"`, EXIT.USAGE, undefined, '--format');
          }
          if (!json) printLine(`Uploading ${file} (${formatBytes(statSync(file).size)}) for environment ${options.env}…`);
          try {
            const { dataset, report } = await client.uploadDataset(file, {
              environment: options.env,
              name: options.name,
              format: options.format as 'jsonl' | 'parquet' | undefined,
              strict: options.strict === true,
            });
            if (json) return printJson({ dataset, report });
            printLine(`Stored dataset ${dataset.id} "${dataset.name}" (${dataset.format}, ${formatBytes(dataset.bytes)}).`);
            printReport(report);
            printLine(`Use it: opentinker train ${options.env} environment.dataset=${dataset.id}   (or environment.val_dataset=…)`);
          } catch (error) {
            if (!json && isOpenTinkerError(error) && error.code === 'OT_ERR_DATASET_INVALID' && isReport(error.details)) printReport(error.details);
            if (isOpenTinkerError(error) && error.code === 'OT_ERR_VALIDATION' && error.field === 'environment') {
              throw new CliError(`Unknown environment ${options.env} (known: ${await knownEnvironments(client)})`, EXIT.FAILED, error.code, '--env');
            }
            throw error;
          }
        }),
      ),
  );

  added.push(
    withCommonOptions(data.command('list').description("Datasets, newest first (yours; everyone's for admins)"))
      .option('--page <n>', 'page number', '1')
      .option('--limit <n>', 'datasets per page (1-200)', '50')
      .action(
        clientAction<{ page: string; limit: string }, []>(async ({ client, json, options }) => {
          const page = intOption('--page', options.page, 1, 1_000_000)!;
          const limit = intOption('--limit', options.limit, 1, 200)!;
          const result = await client.datasets.list({ page, limit });
          if (json) return printJson(result);
          if (result.items.length === 0) return printLine(result.total ? `No datasets on page ${page} (${result.total} in all).` : 'No datasets.');
          printLine(
            table(result.items, [
              ['ID', (d) => d.id],
              ['NAME', (d) => d.name],
              ['ENV', (d) => d.environment],
              ['FORMAT', (d) => d.format],
              ['ROWS', (d) => d.rows],
              ['BAD', (d) => d.invalid_rows],
              ['SIZE', (d) => formatBytes(d.bytes)],
              ['AGE', (d) => formatAge(d.created_at)],
            ]),
          );
          const pages = Math.ceil(result.total / limit);
          if (pages > 1) printLine(`Page ${page} of ${pages} (${result.total} datasets)${page < pages ? `; next: --page ${page + 1}` : ''}`);
        }),
      ),
  );

  added.push(
    withCommonOptions(data.command('preview').description('The first rows of a dataset, one JSON object per line').argument('<id>', 'dataset id'))
      .option('--limit <n>', 'rows (1-100)', '20')
      .action(
        clientAction<{ limit: string }, [string]>(async ({ client, json, options }, id) => {
          const preview = await client.datasets.preview(checkId(id), { limit: intOption('--limit', options.limit, 1, 100) });
          if (json) return printJson(preview);
          const d = preview.dataset;
          printLine(`# ${d.name} (${d.id}): ${d.rows} rows, ${d.invalid_rows} bad, ${d.format}, environment ${d.environment}`);
          for (const row of preview.rows) printLine(`${row.row}\t${row.error ? `# ${row.error}` : JSON.stringify(row.value)}`);
        }),
      ),
  );

  added.push(
    withCommonOptions(data.command('delete').description('Delete a dataset and its file (refused while an unfinished job uses it)').argument('<id>', 'dataset id')).action(
      clientAction<object, [string]>(async ({ client, json }, id) => {
        await client.datasets.delete(checkId(id));
        if (json) return printJson({ deleted: id });
        printLine(`Deleted dataset ${id}.`);
      }),
    ),
  );
  return added;
}

function checkId(id: string): string {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) {
    throw new CliError(`"${id}" is not a dataset id (see \`opentinker data list\`)`, EXIT.USAGE, undefined, 'id');
  }
  return id;
}

function isReport(value: unknown): value is DatasetReport {
  return typeof value === 'object' && value !== null && typeof (value as DatasetReport).rows === 'number' && Array.isArray((value as DatasetReport).bad_rows);
}

function printReport(report: DatasetReport): void {
  printLine(`Rows: ${report.rows}; usable: ${report.valid_rows}; bad: ${report.invalid_rows}.`);
  if (report.columns.length) printLine(`Columns: ${report.columns.join(', ')}`);
  if (report.bad_rows.length === 0) return;
  printLine(report.invalid_rows > report.bad_rows.length ? `First ${report.bad_rows.length} bad rows:` : 'Bad rows:');
  printLine(
    table(report.bad_rows, [
      ['ROW', (b) => b.row],
      ['REASON', (b) => b.reason],
    ]),
  );
}
