import { isOpenTinkerError, JobSpec, JobState, OpenTinkerClient } from '@opentinker/client';
import { Command } from 'commander';
import { existsSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { CliError, EXIT } from './cli-error';
import { downloadCheckpoint, registerCheckpointsCommand } from './checkpoints.commands';
import { clientAction, intOption, withCommonOptions } from './command-kit';
import { knownEnvironments } from './envs.commands';
import { resolveJobId } from './job-ref';
import { saveDownload } from './save-download';
import { readJobSpec } from './job-spec-file';
import { watchJobUntilEnd } from './job-watch';
import { withHubToken } from './hub-credentials';
import { withWandbCredentials } from './wandb-credentials';
import { formatAge, formatBytes, formatNumber, printJson, printLine, table } from './output';

const STATES: readonly JobState[] = ['queued', 'starting', 'running', 'succeeded', 'failed', 'cancelled'];

/**
 * `jobs submit|list|show|watch|logs|cancel|metrics|artifacts|checkpoints|download`.
 *
 * @example
 * ```bash
 * opentinker jobs submit --config job.yaml --watch
 * opentinker jobs list --state running,queued
 * opentinker jobs watch 4f0c            # a unique prefix of the id is enough
 * opentinker jobs logs 4f0c --follow
 * opentinker jobs download 4f0c result.json -o out/result.json
 * opentinker jobs download 4f0c --step 20          # checkpoint step-20 as job-<id>-step-20.tar
 * ```
 */
export function registerJobsCommands(program: Command): void {
  const jobs = program.command('jobs').description('Submit and follow jobs');

  withCommonOptions(jobs.command('submit').description('Submit a job spec (JSON or YAML; unknown keys are refused with their path)'))
    .requiredOption('-c, --config <file>', 'job spec file (.json, .yaml, .yml), or - for stdin')
    .option('--watch', 'then follow it as `jobs watch` does')
    .option('--logs', "with --watch: print the job's log lines too")
    .action(
      clientAction<{ config: string; watch?: boolean; logs?: boolean }, []>(async ({ client, json, options, connection }) => {
        const spec = await readJobSpec(options.config);
        const job = await submit(client, spec);
        if (options.watch) {
          if (!json) printLine(`Submitted job ${job.id} (${job.kind}${job.name ? ` "${job.name}"` : ''}).`);
          return watchJobUntilEnd(client, job.id, { json, logs: options.logs === true }, connection.url);
        }
        if (json) return printJson(job);
        printLine(`Submitted job ${job.id} (${job.kind}${job.name ? ` "${job.name}"` : ''}), ${job.state}.`);
        printLine(`Follow it: opentinker jobs watch ${job.id}`);
      }),
    );

  withCommonOptions(jobs.command('list').description("Jobs, newest first (yours; everyone's for admins)"))
    .option('--state <states>', `comma-separated: ${STATES.join(',')}`)
    .option('--kind <kind>', 'only this job kind')
    .option('--page <n>', 'page number', '1')
    .option('--limit <n>', 'jobs per page (1-100)', '20')
    .action(
      clientAction<{ state?: string; kind?: string; page: string; limit: string }, []>(async ({ client, json, options }) => {
        const page = intOption('--page', options.page, 1, 1_000_000)!;
        const limit = intOption('--limit', options.limit, 1, 100)!;
        const state = options.state === undefined ? undefined : parseStates(options.state);
        const result = await client.jobs.list({ page, limit, state, kind: options.kind });
        if (json) return printJson(result);
        if (result.items.length === 0) return printLine(result.total ? `No jobs on page ${page} (${result.total} in all).` : 'No jobs.');
        printLine(
          table(result.items, [
            ['ID', (j) => j.id],
            ['NAME', (j) => j.name],
            ['KIND', (j) => j.kind],
            ['STATE', (j) => (j.cancel_requested && !['cancelled', 'succeeded', 'failed'].includes(j.state) ? `${j.state} (cancelling)` : j.state)],
            ['PROGRESS', (j) => (j.progress ? `${j.progress.step}${j.progress.total ? `/${j.progress.total}` : ''}` : '')],
            ['AGE', (j) => formatAge(j.created_at)],
          ]),
        );
        const pages = Math.ceil(result.total / limit);
        if (pages > 1) printLine(`Page ${page} of ${pages} (${result.total} jobs)${page < pages ? `; next: --page ${page + 1}` : ''}`);
      }),
    );

  withCommonOptions(jobs.command('show').description('One job: state, progress, resources, spec').argument('<id>', 'job id or a unique prefix')).action(
    clientAction<object, [string]>(async ({ client, json }, ref) => {
      const job = await client.jobs.get(await resolveJobId(client, ref));
      if (json) return printJson(job);
      const rows: [string, unknown][] = [
        ['id', job.id],
        ['name', job.name],
        ['kind', job.kind],
        ['state', `${job.state}${job.cancel_requested && job.state !== 'cancelled' ? ' (cancel requested)' : ''}`],
        ['progress', job.progress ? `${job.progress.step}${job.progress.total ? `/${job.progress.total}` : ''}${job.progress.message ? ` ${job.progress.message}` : ''}` : null],
        ['owner', job.owner_id],
        ['priority', job.priority],
        ['resources', `${job.resources.gpus} GPU, ${job.resources.cpu_slots} CPU slot(s)`],
        ['devices', job.devices?.join(', ')],
        ['worker', job.worker_id],
        ['attempts', `${job.attempts}/${job.max_attempts}`],
        ['created', `${job.created_at} (${formatAge(job.created_at)})`],
        ['started', job.started_at],
        ['finished', job.finished_at],
        ['exit code', job.exit_code],
        ['error', job.error],
      ];
      for (const [k, v] of rows) if (v !== null && v !== undefined) printLine(`${k.padEnd(10)} ${String(v)}`);
      printLine('spec');
      printLine(JSON.stringify(job.spec, null, 2).replace(/^/gm, '  '));
    }),
  );

  withCommonOptions(jobs.command('watch').description('Follow a job until it ends: progress, metrics, ETA, then a summary').argument('<id>', 'job id or a unique prefix'))
    .option('--logs', "print the job's log lines too")
    .action(
      clientAction<{ logs?: boolean }, [string]>(async ({ client, json, options, connection }, ref) =>
        watchJobUntilEnd(client, await resolveJobId(client, ref), { json, logs: options.logs === true }, connection.url),
      ),
    );

  withCommonOptions(jobs.command('logs').description("The job runner's output").argument('<id>', 'job id or a unique prefix'))
    .option('--tail <n>', 'only the last N lines')
    .option('-f, --follow', 'keep printing new output until the job ends')
    .action(
      clientAction<{ tail?: string; follow?: boolean }, [string]>(async ({ client, json, options }, ref) => {
        const tail = intOption('--tail', options.tail, 1, 100_000);
        if (options.follow && tail !== undefined) {
          throw new CliError('--tail and --follow cannot be combined: --follow prints the whole log, then what comes', EXIT.USAGE, undefined, '--tail');
        }
        const id = await resolveJobId(client, ref);
        if (!options.follow) {
          const text = await client.jobs.logs(id, { tail });
          if (json) return printJson({ id, text });
          process.stdout.write(text);
          return;
        }
        for await (const event of client.watchJob(id)) {
          if (event.type !== 'log') continue;
          if (json) process.stdout.write(JSON.stringify({ id: event.id, text: event.data.text, time: event.data.time }) + '\n');
          else process.stdout.write(event.data.text);
        }
      }),
    );

  withCommonOptions(jobs.command('cancel').description('Cancel a job (queued: at once; running: its worker stops it)').argument('<id>', 'job id or a unique prefix'))
    .option('--wait', 'wait until it has stopped')
    .action(
      clientAction<{ wait?: boolean }, [string]>(async ({ client, json, options }, ref) => {
        const id = await resolveJobId(client, ref);
        let job = await client.jobs.cancel(id);
        if (options.wait && job.state !== 'cancelled') job = await client.waitForJob(id);
        if (json) return printJson(job);
        printLine(job.state === 'cancelled' ? `Job ${id} cancelled.` : `Cancellation requested for job ${id} (${job.state}); its worker stops it shortly.`);
        if (options.wait && job.state !== 'cancelled') printLine(`It ended ${job.state} before it could be cancelled.`);
      }),
    );

  withCommonOptions(jobs.command('metrics').description('Metric values by step').argument('<id>', 'job id or a unique prefix'))
    .option('--name <name>', 'only this metric')
    .option('--after-step <n>', 'only steps after this one')
    .option('--limit <n>', 'at most this many points (1-10000)')
    .action(
      clientAction<{ name?: string; afterStep?: string; limit?: string }, [string]>(async ({ client, json, options }, ref) => {
        const id = await resolveJobId(client, ref);
        const points = await client.jobs.metrics(id, {
          name: options.name,
          after_step: intOption('--after-step', options.afterStep, -1, Number.MAX_SAFE_INTEGER),
          limit: intOption('--limit', options.limit, 1, 10_000),
        });
        if (json) return printJson(points);
        if (points.length === 0) return printLine('No metrics yet.');
        // One row per step, one column per metric: how people read training curves.
        const names = [...new Set(points.map((p) => p.name))];
        const steps = new Map<number, Map<string, number>>();
        for (const p of points) steps.set(p.step, (steps.get(p.step) ?? new Map()).set(p.name, p.value));
        printLine(
          table(
            [...steps],
            [
              ['STEP', ([step]) => step],
              ...names.map((n): [string, (r: [number, Map<string, number>]) => string] => [n.toUpperCase(), ([, v]) => (v.has(n) ? formatNumber(v.get(n)!) : '')]),
            ],
          ),
        );
      }),
    );

  withCommonOptions(jobs.command('artifacts').description('Files the job published').argument('<id>', 'job id or a unique prefix')).action(
    clientAction<object, [string]>(async ({ client, json }, ref) => {
      const list = await client.jobs.artifacts(await resolveJobId(client, ref));
      if (json) return printJson(list);
      if (list.length === 0) return printLine('No artifacts.');
      printLine(
        table(list, [
          ['NAME', (a) => a.name],
          ['SIZE', (a) => formatBytes(a.size)],
          ['CREATED', (a) => formatAge(a.created_at)],
          ['WORKER', (a) => a.worker_id],
        ]),
      );
    }),
  );

  registerCheckpointsCommand(jobs);

  withCommonOptions(
    jobs
      .command('download')
      .description('Download an artifact by name, or (without a name) a checkpoint as a tar')
      .argument('<id>', 'job id or a unique prefix')
      .argument('[name]', 'artifact name (see `jobs artifacts`); leave out for a checkpoint'),
  )
    .option('--step <n>', 'checkpoint step (see `jobs checkpoints`), or latest (the default)')
    .option('-o, --output <path>', 'where to write it (default: ./<name>, or ./job-<id>-step-<n>.tar; - for stdout)')
    .option('--force', 'overwrite an existing file')
    .action(
      clientAction<{ step?: string; output?: string; force?: boolean }, [string, string | undefined]>(async ({ client, json, options }, ref, name) => {
        const id = await resolveJobId(client, ref);
        if (name === undefined) return downloadCheckpoint(client, id, options, json);
        if (options.step !== undefined) {
          throw new CliError('--step downloads a checkpoint: leave out the artifact name, or --step', EXIT.USAGE, undefined, '--step');
        }
        const target = options.output ?? basename(name);
        if (target !== '-' && existsSync(target) && !options.force) {
          throw new CliError(`${target} exists; pass --force to overwrite it, or -o to choose another path`, EXIT.USAGE, undefined, '--output');
        }
        const stream = Readable.fromWeb((await client.jobs.downloadArtifact(id, name)) as NodeReadableStream<Uint8Array>);
        if (target === '-') {
          await pipeline(stream, process.stdout, { end: false });
          return;
        }
        const bytes = await saveDownload(stream, target);
        if (json) return printJson({ id, name, path: resolve(target), size: bytes });
        printLine(`Saved ${name} (${formatBytes(bytes)}) to ${target}`);
      }),
    );
}

/**
 * Submits a spec; a refusal that names the environment lists the ones the server knows. A train job
 * that logs to W&B takes the W&B settings of this shell (see withWandbCredentials), a job naming an
 * `hf:` model its HF_TOKEN (see withHubToken).
 */
export async function submit(client: OpenTinkerClient, spec: Record<string, unknown>) {
  const wandb = withWandbCredentials(spec, process.env);
  const hub = withHubToken(wandb.spec, process.env);
  for (const note of [...wandb.notes, ...hub.notes]) process.stderr.write(`opentinker: note: ${note}\n`);
  try {
    return await client.jobs.submit(hub.spec as JobSpec);
  } catch (error) {
    if (isOpenTinkerError(error) && error.field?.startsWith('environment')) {
      throw new CliError(`${error.message} (known environments: ${await knownEnvironments(client)})`, EXIT.FAILED, error.code, error.field);
    }
    throw error;
  }
}

function parseStates(value: string): JobState[] {
  const states = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of states) {
    if (!STATES.includes(s as JobState)) {
      throw new CliError(`Unknown state "${s}" in --state (known: ${STATES.join(', ')})`, EXIT.USAGE, undefined, '--state');
    }
  }
  return states as JobState[];
}
