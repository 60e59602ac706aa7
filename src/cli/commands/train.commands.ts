import type { OpenTinkerClient } from '@opentinker/client';
import { Command } from 'commander';
import { mkdirSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { CliError } from './cli-error';
import { clientAction, fail, withCommonOptions } from './command-kit';
import { connectionWithConfig, readCredentials } from './credentials';
import { buildJobSpec, SEED_KEYS } from './job-overrides';
import type { OverrideKind, OverrideResult } from './job-overrides';
import { readJobSpec } from './job-spec-file';
import { watchJobUntilEnd } from './job-watch';
import { submitWithLocalModel } from './model-upload';
import { printJson, printLine } from './output';
import { saveDownload } from './save-download';
import { readSeedTasks } from './seed-tasks';

/** What the progress line shows first: reward and accuracy or win rate (the contract's metric names). */
export const LINE_METRICS: Record<OverrideKind, readonly string[]> = {
  train: ['reward/mean', 'val/accuracy', 'val/win_rate', 'sft/loss', 'val/reward_mean'],
  inference: ['accuracy', 'win_rate', 'reward/mean', 'response_length/mean'],
};

/**
 * `train <env> [key=value …]` and `infer <env> [key=value …]`: a train or inference job from the
 * seed's command-line overrides (so an OpenTinker command carries over), optionally on top of
 * `--config`, followed with a progress bar unless `--no-watch`.
 *
 * @example
 * ```bash
 * opentinker train math model_path=/models/qwen batch_size=16 test_freq=5 data_path=train.parquet val_data_path=test.parquet
 * opentinker train math model.preset=tiny-char environment.config.style=equation algorithm.filter_groups=true
 * opentinker infer math model_path=job:4f0c val_batch_size=200
 * ```
 */
export function registerTrainCommands(program: Command): void {
  register(program, 'train', 'train', 'Submit a training job (RL, with an optional SFT warm-up) and follow it');
  register(program, 'infer', 'inference', "Run a policy (a checkpoint, model folder or preset) on an environment's tasks and follow it");
}

function register(program: Command, name: string, kind: OverrideKind, description: string): void {
  const command = withCommonOptions(
    program
      .command(name)
      .description(description)
      .argument('[env]', 'environment id (e.g. math, gomoku); optional when --config names it')
      .argument('[overrides...]', "key=value: the seed's names (batch_size, data_path, model_path, scheduler_url, …) or a spec path (algorithm.clip_ratio=0.28)"),
  )
    .option('-c, --config <file>', "a job spec file (.json, .yaml), or one of the seed's client configs (math_param.yaml, …), the overrides apply to")
    .option('--config-name <file>', "the same as --config (the seed's Hydra flag)")
    .option('--no-watch', 'print the job id and return instead of following it')
    .option('--logs', "while watching, print the job's log lines too")
    .addHelpText('after', `\nSeed names (docs/seed-compatibility.md): ${Object.keys(SEED_KEYS[kind]).join(' ')}\n`);

  type Options = { config?: string; configName?: string; watch: boolean; logs?: boolean };
  const handler = clientAction<Options, [string | undefined, string[]]>(async ({ client, json, options, connection }, env, tokens) => {
    const built = await buildFromArgs(kind, env, tokens, options.config ?? options.configName);
    for (const note of built.notes) process.stderr.write(`opentinker: note: ${note}\n`);
    if (built.outputPath !== undefined && !options.watch) {
      throw new CliError(
        'output_path needs the command to follow the job: leave out --no-watch, or download later with opentinker jobs download <id> results.jsonl',
        2,
        undefined,
        'output_path',
      );
    }
    await sendData(client, built, json);
    const job = await submitWithLocalModel(client, built.spec, json);
    if (options.watch) {
      if (!json) printLine(`Submitted ${kind} job ${job.id}${job.name ? ` "${job.name}"` : ''}.`);
      const code = await watchJobUntilEnd(client, job.id, { json, logs: options.logs === true, metrics: LINE_METRICS[kind] }, connection.url);
      if (code === 0 && built.outputPath !== undefined) await saveResults(client, job.id, built.outputPath, json);
      if (!json && code === 0) printNextSteps(kind, job.id, String((built.spec.environment as { id?: unknown }).id ?? 'opentinker'));
      return code;
    }
    if (json) return printJson(job);
    printLine(`Submitted ${kind} job ${job.id}, ${job.state}.`);
    printLine(`Follow it: opentinker jobs watch ${job.id}`);
  });

  command.action(async (...args: unknown[]) => {
    const cmd = args[args.length - 1] as Command;
    const options = cmd.opts() as Options & { url?: string; json?: boolean };
    // scheduler_url=… picks the server, like --url: it must be known before the client is built.
    try {
      const { url, apiKey, configConnection } = await buildFromArgs(kind, args[0] as string | undefined, args[1] as string[], options.config ?? options.configName);
      if (options.config !== undefined && options.configName !== undefined) throw new CliError('give --config or --config-name, not both', 2, undefined, '--config-name');
      // scheduler_api_key=… is this command's key, as OPENTINKER_API_KEY would be (one process, one command).
      if (apiKey !== undefined) process.env.OPENTINKER_API_KEY = apiKey;
      if (url !== undefined) {
        if (options.url !== undefined && options.url.replace(/\/+$/, '') !== url.replace(/\/+$/, '')) {
          throw new CliError(`scheduler_url=${url} and --url ${options.url} name different servers`, 2, undefined, 'scheduler_url');
        }
        cmd.setOptionValue('url', url);
      }
      const fallback = connectionWithConfig(cmd.getOptionValue('url') as string | undefined, process.env, readCredentials(), configConnection);
      if (fallback.url !== undefined) cmd.setOptionValue('url', fallback.url);
      if (fallback.key !== undefined) process.env.OPENTINKER_API_KEY = fallback.key;
      for (const note of fallback.notes) process.stderr.write(`opentinker: note: ${note}\n`);
    } catch (error) {
      if (!(error instanceof CliError)) throw error;
      return fail(error, options.json === true);
    }
    return handler(...args);
  });
}

async function buildFromArgs(kind: OverrideKind, env: string | undefined, tokens: string[], config: string | undefined) {
  // `train algorithm.x=1 --config job.yaml`: the environment comes from the file, the first token is an override.
  const [envId, rest] = env !== undefined && env.includes('=') ? [undefined, [env, ...tokens]] : [env, tokens];
  const base = config ? await readJobSpec(config) : {};
  return buildJobSpec(kind, envId, rest, base);
}

/** What to do with a job that succeeded. */
const NEXT_STEPS: Record<OverrideKind, (id: string, env: string) => string> = {
  train: (id, env) => `Evaluate it: opentinker infer ${env} model_path=job:${id}   (job:${id}/step-<n> for an earlier checkpoint)`,
  inference: (id) => `Results: opentinker jobs download ${id} results.jsonl`,
};

/**
 * The local data files of the command line, each either uploaded as a dataset, or, for an OpenTinker game
 * server (which cannot read this server's datasets), read here and sent as its split's tasks.
 */
async function sendData(client: OpenTinkerClient, built: OverrideResult, json: boolean): Promise<void> {
  const environment = built.spec.environment as Record<string, unknown>;
  for (const upload of built.uploads) {
    if (environment.protocol === 'opentinker') {
      const tasks = await readSeedTasks(resolve(upload.path), upload.token, String(environment.id ?? 'opentinker'));
      const split = upload.key === 'dataset' ? 'train' : 'test';
      environment.tasks = { ...(environment.tasks as Record<string, unknown> | undefined), [split]: tasks };
      if (!json) printLine(`Read ${tasks.length} ${split} tasks from ${upload.path} for the game server.`);
      continue;
    }
    const { dataset } = await client.uploadDataset(resolve(upload.path), { environment: String(environment.id), name: basename(upload.path) });
    if (!json) printLine(`Uploaded ${upload.path} as dataset ${dataset.id}.`);
    environment[upload.key] = dataset.id;
  }
}

/** The seed's output_path: the job's results.jsonl written there (folders made, an older file replaced), as the seed writes its output. */
async function saveResults(client: OpenTinkerClient, id: string, target: string, json: boolean): Promise<void> {
  mkdirSync(dirname(resolve(target)), { recursive: true });
  const stream = Readable.fromWeb((await client.jobs.downloadArtifact(id, 'results.jsonl')) as NodeReadableStream<Uint8Array>);
  await saveDownload(stream, target);
  if (!json) printLine(`Saved results.jsonl to ${target}`);
}

function printNextSteps(kind: OverrideKind, id: string, env: string): void {
  printLine(NEXT_STEPS[kind](id, env));
}
