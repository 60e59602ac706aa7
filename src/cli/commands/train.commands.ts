import { Command } from 'commander';
import { basename, resolve } from 'node:path';
import { CliError } from './cli-error';
import { clientAction, fail, withCommonOptions } from './command-kit';
import { buildJobSpec } from './job-overrides';
import type { OverrideKind } from './job-overrides';
import { readJobSpec } from './job-spec-file';
import { watchJobUntilEnd } from './job-watch';
import { submit } from './jobs.commands';
import { printJson, printLine } from './output';

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
  register(program, 'infer', 'inference', 'Run a policy (a checkpoint, model folder or preset) on an environment\'s tasks and follow it');
}

function register(program: Command, name: string, kind: OverrideKind, description: string): void {
  const command = withCommonOptions(
    program
      .command(name)
      .description(description)
      .argument('[env]', 'environment id (e.g. math, gomoku); optional when --config names it')
      .argument('[overrides...]', 'key=value: the seed\'s names (batch_size, data_path, model_path, scheduler_url, …) or a spec path (algorithm.clip_ratio=0.28)'),
  )
    .option('-c, --config <file>', 'a job spec file (.json, .yaml) the overrides apply to')
    .option('--no-watch', 'print the job id and return instead of following it')
    .option('--logs', 'while watching, print the job\'s log lines too')
    .addHelpText(
      'after',
      `\nSeed names: ${name === 'train' ? 'batch_size val_batch_size num_epochs total_steps save_freq test_freq data_path val_data_path tokenizer_path model_path scheduler_url interaction.config.env_host interaction.config.env_port adv_estimator rollout_n lr kl_loss_coef' : 'batch_size val_batch_size (tasks) data_path val_data_path tokenizer_path model_path scheduler_url interaction.config.env_host interaction.config.env_port'}\n`,
    );

  type Options = { config?: string; watch: boolean; logs?: boolean };
  const handler = clientAction<Options, [string | undefined, string[]]>(async ({ client, json, options, connection }, env, tokens) => {
    const built = await buildFromArgs(kind, env, tokens, options.config);
    const environment = built.spec.environment as Record<string, unknown>;
    for (const upload of built.uploads) {
      const { dataset } = await client.uploadDataset(resolve(upload.path), { environment: String(environment.id), name: basename(upload.path) });
      if (!json) printLine(`Uploaded ${upload.path} as dataset ${dataset.id}.`);
      environment[upload.key] = dataset.id;
    }
    const job = await submit(client, built.spec);
    if (options.watch) {
      if (!json) printLine(`Submitted ${kind} job ${job.id}${job.name ? ` "${job.name}"` : ''}.`);
      const code = await watchJobUntilEnd(client, job.id, { json, logs: options.logs === true, metrics: LINE_METRICS[kind] }, connection.url);
      if (!json && code === 0) printNextSteps(kind, job.id, String((built.spec.environment as { id: unknown }).id));
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
      const { url } = await buildFromArgs(kind, args[0] as string | undefined, args[1] as string[], options.config);
      if (url !== undefined) {
        if (options.url !== undefined && options.url.replace(/\/+$/, '') !== url.replace(/\/+$/, '')) {
          throw new CliError(`scheduler_url=${url} and --url ${options.url} name different servers`, 2, undefined, 'scheduler_url');
        }
        cmd.setOptionValue('url', url);
      }
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

function printNextSteps(kind: OverrideKind, id: string, env: string): void {
  printLine(NEXT_STEPS[kind](id, env));
}
