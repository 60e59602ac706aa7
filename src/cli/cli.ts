import { Command } from 'commander';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { loadConfig, redactConfig } from '../config/app-config';
import { INSTALL_ROOT } from '../config/install-layout';
import { tinkerForm } from '../auth/api-key';
import { AppError, ErrorCode } from '../core/app-error';
import { createEnvServer, createOpenTinkerEnvServer } from '../registry/env-server';
import { loadEnvironmentExport, resolveEnvironment } from '../registry/resolve-environment';
import { registerModelCommands } from '@opentinker/engine/cli';
import { registerClientCommands } from './commands/client-commands';
import { addServeFlags, registerConfigCommand, serveOverrides, type ServeFlags } from './commands/config.command';
import { localHubCache, localModelDir, registerModelsCommands } from './commands/models.commands';
import { fetchHubDataset, HUB_DATASETS } from '../hub/hub-datasets';
import { registerQuickstartCommand } from './commands/quickstart.command';
import { warnWithoutEngineAddon } from './commands/engine-notice';

type PrepareDataset = (input: string, output: string, options: { format: string; split: string }) => Promise<{ rows: number; skipped: number }>;

export async function main(argv: string[]): Promise<void> {
  const program = new Command('opentinker').description('Agentic reinforcement learning as a self-hosted service').showHelpAfterError();

  addServeFlags(program.command('serve').description('Start the API server (with a local worker unless --no-worker)')).action(async (opts: ServeFlags) => {
    const config = loadConfig(process.env, serveOverrides(opts));
    const { createApi, ensureAdmin } = await loadServer();
    const app = await createApi({ config, worker: config.values.embedded_worker });
    const key = await ensureAdmin(app);
    await app.listen({ host: config.values.host, port: config.values.port });
    const url = `http://${config.values.host}:${config.values.port}`;
    process.stdout.write(`OpenTinker listening on ${url} (docs: ${url}/docs)\n`);
    if (config.values.embedded_worker) warnWithoutEngineAddon();
    process.stdout.write(`Data: ${config.home}; database: ${config.usesPostgres ? 'postgres' : 'sqlite'}; queue: ${config.usesRedis ? 'bullmq' : 'embedded'}\n`);
    if (key) {
      process.stdout.write(`\nCreated the admin user. Its API key is shown only this once:\n\n  ${key}\n\n(for the Tinker SDK: ${tinkerForm(key)})\n\n`);
    }
    if (config.values.log_level === 'debug' || config.values.log_level === 'verbose') {
      process.stdout.write(`Config: ${JSON.stringify(redactConfig(config.values))}\n`);
    }
  });

  program
    .command('worker')
    .description('Run a worker that takes jobs from the shared queue (needs OPENTINKER_DATABASE_URL and OPENTINKER_REDIS_URL across machines)')
    .action(async () => {
      const config = loadConfig(process.env);
      const { createWorker } = await loadServer();
      const app = await createWorker({ config, worker: true });
      process.stdout.write(`OpenTinker worker running; database: ${config.usesPostgres ? 'postgres' : 'sqlite'}; queue: ${config.usesRedis ? 'bullmq' : 'embedded'}\n`);
      warnWithoutEngineAddon();
      void app;
    });

  const env = program.command('env').description('Environments');
  env
    .command('serve')
    .description("Serve one environment over the HTTP environment protocol, or OpenTinker's game-server protocol (--protocol opentinker)")
    .argument('<environment>', 'an environment id known to this installation, or the path of an environment package')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on', '8088')
    .option('--token <token>', 'require `Authorization: Bearer <token>` (or OPENTINKER_ENV_TOKEN)')
    .option('--config <json>', 'default config as JSON, or @file.json')
    .option('--idle-seconds <n>', 'close episodes idle this long', '600')
    .option('--timeout-seconds <n>', 'longest one environment call may take', '30')
    .option('--max-episodes <n>', 'open episodes allowed at once', '4096')
    .option('--protocol <protocol>', "opentinker-v1 (this project's /v1 protocol) or opentinker (OpenTinker's /reset, /step, /finalize, /stats)", 'opentinker-v1')
    .option('--shards <n>', 'protocol opentinker: listen on this many consecutive ports from --port (one shared state)', '1')
    .action(async (target: string, opts: Record<string, string | undefined>) => {
      if (opts.protocol !== 'opentinker-v1' && opts.protocol !== 'opentinker') {
        throw new AppError(ErrorCode.VALIDATION, `--protocol must be opentinker-v1 or opentinker, not ${opts.protocol}`, { field: '--protocol' });
      }
      const shards = positive(opts.shards, '--shards');
      if (!Number.isInteger(shards) || shards > 256)
        throw new AppError(ErrorCode.VALIDATION, `--shards must be a whole number from 1 to 256, got ${opts.shards}`, { field: '--shards' });
      if (shards > 1 && opts.protocol !== 'opentinker') throw new AppError(ErrorCode.VALIDATION, '--shards applies to --protocol opentinker only', { field: '--shards' });
      // The same operator settings as the server's: sandbox ceilings (OPENTINKER_SANDBOX_*) cap what a
      // caller may ask of the environment; --config is the operator's own and may set host-only keys.
      const settings = loadConfig(process.env);
      const environment = await resolveEnvironment(target, settings.install.root);
      const token = opts.token ?? process.env.OPENTINKER_ENV_TOKEN;
      const serverOptions = {
        config: parseJsonOption(opts.config, '--config'),
        host: settings.environmentHost,
        token,
        idleSeconds: positive(opts.idleSeconds, '--idle-seconds'),
        callTimeoutSeconds: positive(opts.timeoutSeconds, '--timeout-seconds'),
        maxEpisodes: positive(opts.maxEpisodes, '--max-episodes'),
        jsonMaxDepth: settings.values.json_max_depth,
        log: (m: string) => process.stderr.write(`${m}\n`),
      };
      const port = positive(opts.port, '--port');
      if (port + shards - 1 > 65535) throw new AppError(ErrorCode.VALIDATION, `--shards ${shards} from --port ${port} run past port 65535`, { field: '--shards' });
      const { apps, store } =
        opts.protocol === 'opentinker'
          ? await createOpenTinkerEnvServer(environment, { ...serverOptions, shards })
          : await createEnvServer(environment, serverOptions).then(({ app, store }) => ({ apps: [app], store }));
      await store.instance();
      if (!token && !isLoopbackHost(opts.host!)) {
        process.stderr.write(
          `Warning: serving on ${opts.host} without --token: anyone who can reach this port can run episodes (and the code they send) here. Pass --token or set OPENTINKER_ENV_TOKEN.\n`,
        );
      }
      for (let i = 0; i < apps.length; i++) await apps[i].listen({ host: opts.host, port: port + i });
      const ports = apps.length > 1 ? `${port}-${port + apps.length - 1}` : String(port);
      const protocol = opts.protocol === 'opentinker' ? "OpenTinker's game-server protocol" : 'protocol v1';
      process.stdout.write(`Environment ${environment.id}@${environment.version} served on http://${opts.host}:${ports} (${protocol}${token ? ', token required' : ''})\n`);
      // The first app closes the shared store: the others first.
      const stop = () =>
        void Promise.all(apps.slice(1).map((a) => a.close()))
          .then(() => apps[0].close())
          .then(() => process.exit(0));
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });

  const data = program.command('data').description('Datasets');
  data
    .command('prepare')
    .description(
      'Convert a GSM8K- or MATH-style JSONL/parquet file into the layout an environment loads (verl/OpenTinker JSONL); ' +
        "or fetch gsm8k (openai/gsm8k) or math (DigitalLearningGmbH/MATH-lighteval) from the Hugging Face Hub, as verl's preprocessing does, into <output>/train.jsonl and test.jsonl",
    )
    .argument('<input>', 'JSONL or parquet file, or gsm8k / math (from the Hub, optionally gsm8k@<revision>)')
    .argument('[output]', 'JSONL file to write (a folder for gsm8k / math; default data/<name>)')
    .option('--env <id>', 'environment whose converter to use', 'math')
    .option('--format <format>', 'gsm8k, math or auto', 'auto')
    .option('--split <split>', 'written to extra_info.split', 'train')
    .action(async (input: string, output: string | undefined, opts: { env: string; format: string; split: string }) => {
      const prepare = await loadEnvironmentExport<PrepareDataset>(opts.env, 'prepareDataset', INSTALL_ROOT);
      const [name, revision] = input.split('@', 2) as [string, string | undefined];
      if ((name === 'gsm8k' || name === 'math') && !existsSync(input)) {
        const recipe = HUB_DATASETS[name];
        const { commit, files } = await fetchHubDataset(localHubCache(), recipe, revision ?? null, (l) => process.stderr.write(`${l}\n`));
        const dir = output ?? join('data', name);
        const written: string[] = [];
        for (const split of ['train', 'test'] as const) {
          if (files[split].length === 0) continue;
          const target = join(dir, `${split}.jsonl`);
          const counts = await prepareShards(prepare, files[split], target, { format: recipe.format, split });
          written.push(`${counts.rows} rows to ${target}${counts.skipped ? ` (skipped ${counts.skipped} without a question or an answer)` : ''}`);
        }
        process.stdout.write(`From hf:datasets/${recipe.repo} at ${commit.slice(0, 12)}: wrote ${written.join(', ')}\n`);
        process.stdout.write(
          `Use it: opentinker data upload ${join(dir, 'train.jsonl')} --env math, or environment.config.train_path / test_path on a worker that has the files\n`,
        );
        return;
      }
      if (output === undefined) throw new AppError(ErrorCode.VALIDATION, 'data prepare <input> <output>: name the JSONL file to write', { field: 'output' });
      const { rows, skipped } = await prepare(input, output, { format: opts.format, split: opts.split });
      process.stdout.write(`Wrote ${rows} rows to ${output}${skipped ? `; skipped ${skipped} rows without a question or an answer` : ''}\n`);
    });

  program
    .command('openapi')
    .description('Print the OpenAPI document')
    .action(async () => {
      // The document needs a booted app, which needs a database: a throwaway one.
      const home = mkdtempSync(join(tmpdir(), 'opentinker-openapi-'));
      try {
        const config = loadConfig({}, { home, embedded_worker: false });
        const { createApi } = await loadServer();
        const { buildOpenApiDocument } = await import('../openapi.js');
        const app = await createApi({ config, worker: false, logger: false });
        process.stdout.write(JSON.stringify(buildOpenApiDocument(app), null, 2) + '\n');
        await app.close();
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    });

  registerQuickstartCommand(program);
  registerConfigCommand(program);
  registerClientCommands(program);
  registerModelCommands(program, undefined, localModelDir);
  registerModelsCommands(program);

  try {
    await program.parseAsync(argv);
  } catch (error) {
    const message = error instanceof AppError ? error.message : ((error as Error).stack ?? String(error));
    process.stderr.write(`opentinker: ${message}\n`);
    process.exit(1);
  }
}

/** Converts each shard of a split and joins them into one JSONL file (a split is usually one shard). */
async function prepareShards(prepare: PrepareDataset, inputs: string[], output: string, options: { format: string; split: string }): Promise<{ rows: number; skipped: number }> {
  if (inputs.length === 1) return prepare(inputs[0], output, options);
  const parts: string[] = [];
  let rows = 0;
  let skipped = 0;
  const scratch = mkdtempSync(join(tmpdir(), 'opentinker-prepare-'));
  try {
    for (const [i, input] of inputs.entries()) {
      const part = join(scratch, `${i}.jsonl`);
      const counts = await prepare(input, part, options);
      rows += counts.rows;
      skipped += counts.skipped;
      parts.push(readFileSync(part, 'utf8'));
    }
    mkdirSync(dirname(output), { recursive: true });
    writeFileSync(output, parts.join(''));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return { rows, skipped };
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

/** The Nest application is loaded only by the commands that run it (`env serve` starts in half the time). */
function loadServer() {
  return import('../app.js');
}

function parseJsonOption(value: string | undefined, flag: string): unknown {
  if (value === undefined) return {};
  try {
    return JSON.parse(value.startsWith('@') ? readFileSync(value.slice(1), 'utf8') : value);
  } catch (error) {
    throw new AppError(ErrorCode.VALIDATION, `${flag}: not valid JSON (${(error as Error).message})`, { field: flag });
  }
}

function positive(value: string | undefined, flag: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new AppError(ErrorCode.VALIDATION, `${flag} must be a positive number, got ${value}`, { field: flag });
  return n;
}
