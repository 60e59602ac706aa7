import type { OpenTinkerClient } from '@opentinker/client';
import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { CliError, EXIT } from './cli-error';
import { clientAction, intOption, withCommonOptions } from './command-kit';
import { resolveJobId } from './job-ref';
import { saveDownload } from './save-download';
import { formatAge, formatBytes, printJson, printLine, table } from './output';

/**
 * `jobs checkpoints <id>`: the job's saved checkpoints.
 *
 * @example
 * ```bash
 * opentinker jobs checkpoints 4f0c
 * opentinker jobs download 4f0c --step 20 -o step-20.tar   # a checkpoint as a tar
 * ```
 */
export function registerCheckpointsCommand(jobs: Command): void {
  withCommonOptions(
    jobs.command('checkpoints').description('Saved checkpoints of a job (step, size, LoRA adapter, what model.path names it)').argument('<id>', 'job id or a unique prefix'),
  )
    .option('--files', "list each checkpoint's files too")
    .action(
      clientAction<{ files?: boolean }, [string]>(async ({ client, json, options }, ref) => {
        const id = await resolveJobId(client, ref);
        const list = await client.jobs.checkpoints(id);
        if (json) return printJson(list);
        if (list.length === 0) return printLine(`Job ${id} has no checkpoints yet.`);
        printLine(
          table(list, [
            ['STEP', (c) => c.step],
            ['SIZE', (c) => formatBytes(c.size_bytes)],
            ['LORA', (c) => (c.has_adapter ? 'yes' : 'no')],
            ['CREATED', (c) => formatAge(c.created_at)],
            ['MODEL PATH', (c) => c.model_path],
          ]),
        );
        if (options.files) {
          for (const c of list) {
            printLine(`\nstep ${c.step}`);
            for (const f of c.files) printLine(`  ${formatBytes(f.size).padStart(10)}  ${f.path}`);
          }
        }
        printLine(`Download one: opentinker jobs download ${id} --step ${list[list.length - 1].step}; chat with it: opentinker chat ${id}`);
      }),
    );
}

/**
 * Writes a checkpoint tar (`jobs download <id> [--step n]`): to `target`, or `job-<id>-step-<n>.tar`
 * in the current folder; `-` is stdout. Written beside the target and renamed when complete.
 */
export async function downloadCheckpoint(client: OpenTinkerClient, id: string, options: { step?: string; output?: string; force?: boolean }, json: boolean): Promise<void> {
  const step = options.step === undefined || options.step === 'latest' ? 'latest' : intOption('--step', options.step, 0, Number.MAX_SAFE_INTEGER)!;
  if (options.output !== undefined && options.output !== '-' && existsSync(options.output) && !options.force) {
    throw new CliError(`${options.output} exists; pass --force to overwrite it, or -o to choose another path`, EXIT.USAGE, undefined, '--output');
  }
  const download = await client.jobs.downloadCheckpoint(id, step);
  const stream = Readable.fromWeb(download.stream as NodeReadableStream<Uint8Array>);
  if (options.output === '-') {
    await pipeline(stream, process.stdout, { end: false });
    return;
  }
  const target = options.output ?? `job-${id}-step-${download.step}.tar`;
  if (options.output === undefined && existsSync(target) && !options.force) {
    stream.destroy();
    throw new CliError(`${target} exists; pass --force to overwrite it, or -o to choose another path`, EXIT.USAGE, undefined, '--output');
  }
  const bytes = await saveDownload(stream, target);
  if (json) return printJson({ id, step: download.step, path: resolve(target), size: bytes });
  printLine(`Saved checkpoint step ${download.step} of job ${id} (${formatBytes(bytes)}) to ${target}`);
}
