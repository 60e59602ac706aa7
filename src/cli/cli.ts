import { Command, Option } from 'commander';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApi, createWorker, ensureAdmin } from '../app';
import { loadConfig, redactConfig } from '../config/app-config';
import { AppError } from '../core/app-error';
import { buildOpenApiDocument } from '../openapi';

/** Where the compiled package lives: `bin/opentinker.js` passes its own folder's parent. */
export interface CliContext {
  root: string;
}

export async function main(argv: string[], context: CliContext): Promise<void> {
  const runnerEntry = join(context.root, 'dist', 'runner', 'job-runner.main.js');
  const program = new Command('opentinker')
    .description('Agentic reinforcement learning as a self-hosted service')
    .showHelpAfterError();

  program
    .command('serve')
    .description('Start the API server (with a local worker unless --no-worker)')
    .addOption(new Option('--host <host>', 'address to listen on (OPENTINKER_HOST)'))
    .addOption(new Option('--port <port>', 'port to listen on (OPENTINKER_PORT)'))
    .option('--no-worker', 'do not run jobs in this process (OPENTINKER_EMBEDDED_WORKER=false)')
    .action(async (opts: { host?: string; port?: string; worker: boolean }) => {
      const config = loadConfig(process.env, { host: opts.host, port: opts.port, ...(opts.worker ? {} : { embedded_worker: false }) });
      const app = await createApi({ config, worker: config.values.embedded_worker, runnerEntry });
      const key = await ensureAdmin(app);
      await app.listen({ host: config.values.host, port: config.values.port });
      const url = `http://${config.values.host}:${config.values.port}`;
      process.stdout.write(`OpenTinker listening on ${url} (docs: ${url}/docs)\n`);
      process.stdout.write(`Data: ${config.home}; database: ${config.usesPostgres ? 'postgres' : 'sqlite'}; queue: ${config.usesRedis ? 'bullmq' : 'embedded'}\n`);
      if (key) {
        process.stdout.write(`\nCreated the admin user. Its API key is shown only this once:\n\n  ${key}\n\n`);
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
      const app = await createWorker({ config, worker: true, runnerEntry });
      process.stdout.write(`OpenTinker worker running; database: ${config.usesPostgres ? 'postgres' : 'sqlite'}; queue: ${config.usesRedis ? 'bullmq' : 'embedded'}\n`);
      void app;
    });

  program
    .command('openapi')
    .description('Print the OpenAPI document')
    .action(async () => {
      // The document needs a booted app, which needs a database: a throwaway one.
      const home = mkdtempSync(join(tmpdir(), 'opentinker-openapi-'));
      try {
        const config = loadConfig({}, { home, embedded_worker: false });
        const app = await createApi({ config, worker: false, logger: false });
        process.stdout.write(JSON.stringify(buildOpenApiDocument(app), null, 2) + '\n');
        await app.close();
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    });

  try {
    await program.parseAsync(argv);
  } catch (error) {
    const message = error instanceof AppError ? error.message : (error as Error).stack ?? String(error);
    process.stderr.write(`opentinker: ${message}\n`);
    process.exit(1);
  }
}
