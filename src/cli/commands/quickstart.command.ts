import { warnWithoutEngineAddon } from './engine-notice';
import { OpenTinkerClient } from '@opentinker/client';
import type { Job } from '@opentinker/client';
import { Command } from 'commander';
import { existsSync, readdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { AppConfig } from '../../config/app-config';
import { loadConfig } from '../../config/app-config';
import { CliError, EXIT } from './cli-error';
import { fail, intOption } from './command-kit';
import { watchJobUntilEnd } from './job-watch';
import { formatDuration, printLine } from './output';
import { FULL_SIZE, QUICK_SIZE, quickstartInferenceSpec, quickstartTrainSpec, SAMPLES_PER_TASK } from './quickstart-spec';
import type { EvalMode, QuickstartSize } from './quickstart-spec';
import { LINE_METRICS } from './train.commands';

/** What `quickstart --json` prints at the end (and the benchmark records). */
export interface QuickstartSummary {
  train_job: string;
  state: string;
  /** The admin's API key when this run created the admin user of the data folder (shown once), else null. */
  admin_key: string | null;
  /** Greedy held-out accuracy of the SFT-only checkpoint (step-0) and of the final one. */
  accuracy_sft: number | null;
  accuracy_rl: number | null;
  gain_points: number | null;
  /** The same at temperature 1, several samples per problem (the policy's success rate as it samples). */
  sampled_accuracy_sft: number | null;
  sampled_accuracy_rl: number | null;
  sampled_gain_points: number | null;
  /** The train job's greedy validations on the same held-out problems (step 0: the SFT-only policy): the RL curve. */
  val_accuracy: { step: number; value: number }[];
  eval_tasks: number;
  checkpoint_sft: string | null;
  checkpoint: string | null;
  size: QuickstartSize;
  seconds: { server: number; sft: number | null; rl: number | null; train: number; eval: number; total: number };
  rl_steps_per_minute: number | null;
  sft_steps_per_minute: number | null;
}

/**
 * `opentinker quickstart`: the whole product in one command, on this machine, in under 10 minutes.
 * Starts the server in this process (embedded database, queue and worker; data in OPENTINKER_HOME or
 * ~/.opentinker), trains the tiny-char preset on bare addition (SFT warm-up, then GRPO) with a progress
 * bar, runs greedy inference on held-out problems with the SFT-only and the final checkpoints, and
 * prints the accuracy before vs after RL and where the checkpoint is.
 */
export function registerQuickstartCommand(program: Command): void {
  program
    .command('quickstart')
    .description('Train a tiny model on arithmetic (SFT, then GRPO) on this machine and show held-out accuracy before vs after RL (< 10 min)')
    .option('--quick', 'a smoke run of every phase in seconds (learns nothing)')
    .option('--steps <n>', `GRPO steps (default ${FULL_SIZE.rlSteps}; ${QUICK_SIZE.rlSteps} with --quick)`)
    .option('--sft-steps <n>', `supervised warm-up steps (default ${FULL_SIZE.sftSteps}; ${QUICK_SIZE.sftSteps} with --quick)`)
    .option('--seed <n>', 'seed of the model init and the sampling', '1')
    .option('--json', 'print one JSON summary at the end instead of the progress bar')
    .action(async (opts: { quick?: boolean; steps?: string; sftSteps?: string; seed: string; json?: boolean }) => {
      const json = opts.json === true;
      warnWithoutEngineAddon();
      try {
        const base = opts.quick ? QUICK_SIZE : FULL_SIZE;
        const size: QuickstartSize = {
          ...base,
          rlSteps: intOption('--steps', opts.steps, 1, 1_000_000) ?? base.rlSteps,
          sftSteps: intOption('--sft-steps', opts.sftSteps, 0, 1_000_000) ?? base.sftSteps,
        };
        const seed = intOption('--seed', opts.seed, 0, 2 ** 31 - 1)!;
        process.exitCode = await runQuickstart(size, seed, json);
      } catch (error) {
        fail(error instanceof CliError ? error : new CliError((error as Error).message ?? String(error), EXIT.FAILED), json);
      }
      // The in-process server is closed; nothing else should keep the process alive, but a stuck
      // handle must not turn a finished quickstart into a hang.
      setTimeout(() => process.exit(), 2000).unref();
    });
}

async function runQuickstart(size: QuickstartSize, seed: number, json: boolean): Promise<number> {
  const t0 = Date.now();
  const say = (line = '') => {
    if (!json) printLine(line);
  };
  const config = loadConfig(process.env, { host: '127.0.0.1', port: 0, embedded_worker: true });
  if (config.usesRedis) throw new CliError('quickstart runs its own embedded server: unset OPENTINKER_REDIS_URL', EXIT.USAGE);
  say(`OpenTinker quickstart: tiny-char (0.8M parameters) learns 1–3 digit addition ("47+385=") on this machine.`);
  say(`Data: ${tildify(config.home)} (set OPENTINKER_HOME to use another folder)`);

  const server = await startServer(config);
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
  };
  try {
    const client = new OpenTinkerClient({ baseUrl: server.url, apiKey: server.key });
    const tServer = (Date.now() - t0) / 1000;
    if (server.newAdminKey) {
      say(`\nCreated the admin user of this data folder. Its API key is shown only this once (for \`opentinker serve\` later):\n\n  ${server.newAdminKey}\n`);
    }
    say(`Server started in ${tServer.toFixed(1)} s (in this process, ${server.url}).`);
    say(
      `Training: SFT warm-up ${size.sftSteps} steps on ${size.sftExamples} fixed problems, then GRPO ${size.rlSteps} steps ` +
        `(${size.rlBatch} fresh problems × ${size.rolloutN} samples, groups without signal dropped). Ctrl-C to stop.`,
    );

    const tTrain = Date.now();
    const train = await client.jobs.submit(quickstartTrainSpec(size, seed, Math.max(1, config.values.cpu_slots)) as never);
    let finished: Job;
    if (json) {
      process.on('SIGINT', onSigint);
      finished = await waitUnlessInterrupted(client, train.id, () => interrupted);
    } else {
      const code = await watchJobUntilEnd(client, train.id, { json: false, logs: false, metrics: LINE_METRICS.train }, server.url);
      finished = await client.jobs.get(train.id);
      if (code === EXIT.INTERRUPTED) interrupted = true;
    }
    if (interrupted && !['succeeded', 'failed', 'cancelled'].includes(finished.state)) {
      // The worker lives in this process: leaving would kill the job anyway, so stop it cleanly.
      await client.jobs.cancel(train.id).catch(() => undefined);
      finished = await client.waitForJob(train.id, { signal: AbortSignal.timeout(30_000) }).catch(() => finished);
    }
    if (interrupted || finished.state === 'cancelled') {
      say(`Stopped: the train job ${train.id} was cancelled.`);
      return EXIT.INTERRUPTED;
    }
    const trainSeconds = (Date.now() - tTrain) / 1000;
    if (finished.state !== 'succeeded') {
      const tail = await client.jobs.logs(train.id, { tail: 20 }).catch(() => '');
      throw new CliError(`The train job ${train.id} ${finished.state}${finished.error ? `: ${finished.error}` : ''}${tail ? `\nLast log lines:\n${tail}` : ''}`, EXIT.FAILED);
    }
    const phases = await phaseSeconds(client, finished);
    const curve = (await client.jobs.metrics(train.id, { name: 'val/accuracy', limit: 10_000 })).map((p) => ({ step: p.step, value: p.value }));

    say(`\nEvaluating both checkpoints on ${size.evalTasks} held-out problems (never seen in training), greedy and sampled…`);
    const tEval = Date.now();
    // Four inference jobs; the worker runs as many at once as it has CPU slots.
    const runs: [string, string, EvalMode][] = [
      [`job:${train.id}/step-0`, 'SFT only', 'greedy'],
      [`job:${train.id}`, 'SFT + GRPO', 'greedy'],
      [`job:${train.id}/step-0`, 'SFT only', 'sampled'],
      [`job:${train.id}`, 'SFT + GRPO', 'sampled'],
    ];
    const evals = await Promise.all(runs.map(([path, label, mode]) => client.jobs.submit(quickstartInferenceSpec(size, path, label, mode) as never)));
    for (const job of await Promise.all(evals.map((e) => client.waitForJob(e.id)))) {
      if (job.state !== 'succeeded') throw new CliError(`The inference job ${job.id} ${job.state}${job.error ? `: ${job.error}` : ''}`, EXIT.FAILED);
    }
    const evalSeconds = (Date.now() - tEval) / 1000;
    const [accSft, accRl, sampledSft, sampledRl] = await Promise.all(evals.map((e) => lastMetric(client, e.id, 'accuracy')));
    const gain = (before: number | null, after: number | null) => (before !== null && after !== null ? round1((after - before) * 100) : null);

    const checkpoints = join(config.jobDir(train.id), 'work', 'checkpoints');
    const finalDir = latestCheckpoint(checkpoints);
    const sftDir = existsSync(join(checkpoints, 'step-0', 'model')) ? join(checkpoints, 'step-0', 'model') : null;
    const total = (Date.now() - t0) / 1000;
    const summary: QuickstartSummary = {
      train_job: train.id,
      state: finished.state,
      admin_key: server.newAdminKey ?? null,
      accuracy_sft: accSft,
      accuracy_rl: accRl,
      gain_points: gain(accSft, accRl),
      sampled_accuracy_sft: sampledSft,
      sampled_accuracy_rl: sampledRl,
      sampled_gain_points: gain(sampledSft, sampledRl),
      val_accuracy: curve,
      eval_tasks: size.evalTasks,
      checkpoint_sft: sftDir,
      checkpoint: finalDir,
      size,
      seconds: { server: round1(tServer), sft: phases.sft, rl: phases.rl, train: round1(trainSeconds), eval: round1(evalSeconds), total: round1(total) },
      rl_steps_per_minute: phases.rl ? round1((size.rlSteps * 60) / phases.rl) : null,
      sft_steps_per_minute: phases.sft ? round1((size.sftSteps * 60) / phases.sft) : null,
    };
    if (json) {
      process.stdout.write(JSON.stringify(summary) + '\n');
      return EXIT.OK;
    }
    const pct = (v: number | null) => (v === null ? 'n/a' : `${(v * 100).toFixed(1)}%`).padStart(8);
    const points = (v: number | null) => (v === null ? 'n/a' : `${v >= 0 ? '+' : ''}${v.toFixed(1)}`).padStart(8);
    say('');
    say(`Held-out accuracy on ${size.evalTasks} problems:   greedy   sampled (T=1, ${SAMPLES_PER_TASK} per problem)`);
    say(`  after SFT only       ${pct(accSft)}  ${pct(sampledSft)}   job:${train.id}/step-0`);
    say(`  after SFT + GRPO     ${pct(accRl)}  ${pct(sampledRl)}   job:${train.id}`);
    say(`  RL gain (points)     ${points(summary.gain_points)}  ${points(summary.sampled_gain_points)}`);
    if (curve.length > 2) say(`During GRPO (greedy, same problems): ${curve.map((p) => `step ${p.step} ${(p.value * 100).toFixed(1)}%`).join(', ')}`);
    say('');
    say(
      `Took ${formatDuration(total * 1000)}: server ${tServer.toFixed(0)} s, SFT ${phases.sft?.toFixed(0) ?? '?'} s, GRPO ${phases.rl?.toFixed(0) ?? '?'} s` +
        `${summary.rl_steps_per_minute ? ` (${summary.rl_steps_per_minute} steps/min)` : ''}, evaluation ${evalSeconds.toFixed(0)} s.`,
    );
    if (finalDir) {
      say(`Checkpoint (a Hugging Face model folder): ${tildify(finalDir)}`);
      say(`Try it:    npx opentinker model sample ${shellQuote(tildify(finalDir))} --chat --prompt '47+385=' --temperature 0 --max-new-tokens 6`);
    }
    say(`Serve it:  npx opentinker serve, then use job:${train.id} as the model (opentinker infer math model_path=job:${train.id} …,`);
    say(`           or POST /v1/chat/completions with "model": "job:${train.id}").`);
    return EXIT.OK;
  } finally {
    process.off('SIGINT', onSigint);
    await server.close();
  }
}

interface EmbeddedServer {
  url: string;
  key: string;
  /** The admin's key when this run created the admin (shown once). */
  newAdminKey?: string;
  close(): Promise<void>;
}

/**
 * The server as `serve` runs it, on a free local port. The client needs a key: the admin's when this
 * run creates the admin, else a key issued to the admin for this run and revoked at the end.
 */
async function startServer(config: AppConfig): Promise<EmbeddedServer> {
  const { createApi, ensureAdmin } = await import('../../app.js');
  const app = await createApi({ config, worker: true, logger: ['error'] });
  try {
    const adminKey = await ensureAdmin(app);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.getHttpServer().address() as AddressInfo;
    const url = `http://127.0.0.1:${port}`;
    if (adminKey) return { url, key: adminKey, newAdminKey: adminKey, close: () => app.close() };
    const { UsersService } = await import('../../auth/users.service.js');
    const { UsersRepository } = await import('../../auth/users.repository.js');
    const admin = await app.get(UsersRepository).findAdmin();
    if (!admin) throw new CliError('The data folder has no admin user', EXIT.FAILED);
    const users = app.get(UsersService);
    const principal = { userId: admin.id, name: admin.name, role: admin.role, keyId: '' };
    const issued = await users.createKey(principal, 'quickstart');
    return {
      url,
      key: issued.key,
      close: async () => {
        await users.revokeKey(principal, issued.entity.id).catch(() => undefined);
        await app.close();
      },
    };
  } catch (error) {
    await app.close();
    throw error;
  }
}

async function waitUnlessInterrupted(client: OpenTinkerClient, id: string, interrupted: () => boolean): Promise<Job> {
  for (;;) {
    const job = await client.jobs.get(id);
    if (['succeeded', 'failed', 'cancelled'].includes(job.state) || interrupted()) return job;
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function lastMetric(client: OpenTinkerClient, id: string, name: string): Promise<number | null> {
  const points = await client.jobs.metrics(id, { name });
  return points.length ? points[points.length - 1].value : null;
}

/**
 * Seconds of SFT and of RL, from the metric times: SFT runs from the job's start to its last `sft/loss`
 * point, RL from there to the job's end (validation included in both, as the user waits for it).
 */
async function phaseSeconds(client: OpenTinkerClient, job: Job): Promise<{ sft: number | null; rl: number | null }> {
  if (!job.started_at || !job.finished_at) return { sft: null, rl: null };
  const start = Date.parse(job.started_at);
  const end = Date.parse(job.finished_at);
  const sft = await client.jobs.metrics(job.id, { name: 'sft/loss', limit: 10_000 });
  if (sft.length === 0) return { sft: null, rl: round1((end - start) / 1000) };
  const sftEnd = Math.max(...sft.map((p) => Date.parse(p.time)));
  return { sft: round1((sftEnd - start) / 1000), rl: round1((end - sftEnd) / 1000) };
}

/** The model folder of the highest complete `step-<n>` checkpoint, or null. */
function latestCheckpoint(dir: string): string | null {
  if (!existsSync(dir)) return null;
  const steps = readdirSync(dir)
    .map((name) => /^step-(\d+)$/.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
  return steps.length ? join(dir, `step-${steps[steps.length - 1]}`, 'model') : null;
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

function tildify(path: string): string {
  const home = homedir();
  return path === home || path.startsWith(`${home}/`) ? `~${path.slice(home.length)}` : path;
}

function shellQuote(path: string): string {
  return /^[~\w./-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`;
}
