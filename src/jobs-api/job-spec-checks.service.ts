import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { fullFineTuningRefusal, modelPreset, MODEL_PRESETS, validateModelConfig, type ModelConfig } from '@opentinker/engine/models';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isEnvironmentError, shardUrls } from '@opentinker/env-sdk';
import { isAdmin, type Principal } from '../auth/principal';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { DatasetsService } from '../datasets/datasets.service';
import { StorageQuota } from '../datasets/storage-quota.service';
import { EnvironmentRegistry } from '../registry/environment-registry.service';
import { checkRemoteUrl, ENVIRONMENT_URL, UrlNotAllowedError, urlPolicyFor, WANDB_URL, type RemoteUrlUse } from '../egress/egress-policy';
import { WorkersRepository } from '../scheduler/workers.repository';
import { isHubRef, parseHubRef } from '../hub/hub-ref';
import { modelPathAllowed, modelPathRefusal } from '../rollout/model-roots';
import { isUserModelRef, parseUserModelRef, userModelDir } from '../models/user-model-files';
import { UserModelsRepository } from '../models/user-models.repository';
import type { JobEntity } from '../jobs/job.entity';
import { datasetFiles, refuseDatasetsOfRemote, tenantEnvironmentConfig, unknownEnvironment } from '../rollout/environment-checks';
import { findJobKind, kindList, kindsWith } from '../kinds/job-kinds';

const JOB_PATH = /^job:([0-9a-fA-F-]{36})(?:\/step-\d+)?$/;

interface RlSpecParts {
  environment?: { id: string; url?: string; protocol?: string; shards?: number; config?: Record<string, unknown>; dataset?: string; val_dataset?: string };
  model?: { preset?: string; path?: string; lora?: unknown };
}

/**
 * Checks of a parsed job spec that need more than its schema, so a bad spec fails at submission with
 * 400 and the field instead of minutes later in a job runner: the environment id and its config under
 * the operator's policy (no host-only keys, sandbox ceilings), the remote environment's URL and a
 * self-hosted W&B's against the allow-list, the model preset or path (a `job:<id>` of the caller's, or a
 * folder under `model_roots`), the priority ceiling, resources some registered worker can hold, and room
 * in the storage quota for a job that saves checkpoints.
 */
@Injectable()
export class JobSpecChecksService {
  constructor(
    private readonly modules: ModuleRef,
    private readonly config: AppConfig,
    private readonly workers: WorkersRepository,
  ) {}

  /** `visibleJob` is the caller's access check (JobsService.get): someone else's job is not found. */
  async check(spec: Record<string, unknown>, visibleJob: (id: string) => Promise<JobEntity>, caller?: Principal): Promise<void> {
    const { environment, model } = spec as RlSpecParts;
    if (caller) this.checkPriority(spec.priority as number | undefined, caller);
    if (environment && environment.url === undefined) this.checkEnvironment(environment);
    if (environment && caller) await this.checkDatasets(environment, caller);
    if (environment?.url !== undefined) {
      // Every shard of an OpenTinker game server is a URL of its own (a port the allow-list may name).
      const urls = environment.protocol === 'opentinker' ? this.shardUrls(environment.url, environment.shards ?? 1) : [environment.url];
      for (const url of urls) await this.checkUrl(url, caller, ENVIRONMENT_URL);
    }
    // A self-hosted W&B is a tenant-typed URL the worker connects to, like a remote environment.
    const wandb = (spec.trainer as { wandb?: { base_url?: string } } | undefined)?.wandb;
    if (wandb?.base_url !== undefined) await this.checkUrl(wandb.base_url, caller, WANDB_URL);
    if (model?.preset !== undefined && !Object.prototype.hasOwnProperty.call(MODEL_PRESETS, model.preset)) {
      throw invalid('model.preset', `Unknown model preset ${model.preset} (known: ${Object.keys(MODEL_PRESETS).join(', ')})`);
    }
    if (model?.path?.startsWith('job:')) await this.checkJobPath(model.path, visibleJob);
    else if (model?.path !== undefined && isUserModelRef(model.path)) await this.checkUserModel(model.path, caller);
    // A Hub repo is fetched by the worker that runs the job, into its own cache: only its name is checked here.
    else if (model?.path !== undefined && isHubRef(model.path)) parseHubRef(model.path);
    else if (model?.path !== undefined && !modelPathAllowed(model.path, this.config.values.model_roots)) {
      throw new AppError(ErrorCode.HOST_ONLY, modelPathRefusal(model.path, this.config.values.model_roots), { field: 'model.path' });
    }
    if (model && !model.lora && findJobKind(spec.kind as string)?.trains) this.checkFullFineTuning(model);
    await this.checkResources(spec.resources as { gpus: number; cpu_slots: number } | undefined);
    // A job that saves checkpoints, or may download from the Hub, needs room in its owner's storage quota.
    if (caller && findJobKind(spec.kind as string)?.checkpoints) await this.optional(StorageQuota)?.assertRoom(caller, 'kind');
    else if (caller && model?.path !== undefined && isHubRef(model.path)) await this.optional(StorageQuota)?.assertRoom(caller, 'model.path');
  }

  /**
   * Full fine-tuning keeps weights, gradients and AdamW moments in the engine's 4 GiB heap: a model too
   * large for that is refused now, with the size and LoRA as the way out. Checked where the model's
   * config is readable here (a preset, a folder under model_roots on this host); the job runner checks
   * every model again before it loads one.
   */
  private checkFullFineTuning(model: { preset?: string; path?: string }): void {
    let config: ModelConfig | undefined;
    if (model.preset !== undefined) config = modelPreset(model.preset);
    else if (model.path !== undefined && !model.path.startsWith('job:') && !isHubRef(model.path)) {
      const id = parseUserModelRef(model.path);
      const dir = id !== null ? userModelDir(this.config.home, id) : isUserModelRef(model.path) ? null : model.path;
      if (dir === null || !existsSync(join(dir, 'config.json'))) return;
      try {
        config = validateModelConfig(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')));
      } catch {
        return; // an unreadable config is the runner's to report, with the folder's own error
      }
    }
    const refusal = config && fullFineTuningRefusal(config);
    if (refusal) throw new AppError(ErrorCode.LIMIT_EXCEEDED, refusal, { field: 'model.lora' });
  }

  /** Plain users up to the operator's `max_user_priority`; admins up to the schema's 100. */
  private checkPriority(priority: number | undefined, caller: Principal): void {
    const max = this.config.values.max_user_priority;
    if (priority !== undefined && priority > max && !isAdmin(caller)) {
      throw new AppError(ErrorCode.LIMIT_EXCEEDED, `priority ${priority} is above this server's limit for users, ${max} (operator setting max_user_priority)`, {
        field: 'priority',
      });
    }
  }

  /**
   * A job no worker the cluster has known (running or stopped) could ever hold would wait forever:
   * refused now. With no worker registered yet (an API started before its workers) the job is accepted
   * and waits for one.
   */
  private async checkResources(resources: { gpus: number; cpu_slots: number } | undefined): Promise<void> {
    if (!resources) return;
    const workers = await this.workers.all();
    if (workers.length === 0) return;
    const fits = workers.some((w) => {
      const gpus = w.devices.filter((d) => d.kind === 'gpu').length;
      const cpus = w.devices.filter((d) => d.kind === 'cpu').length;
      return gpus >= resources.gpus && cpus >= resources.cpu_slots;
    });
    if (fits) return;
    const most = (kind: 'gpu' | 'cpu') => Math.max(...workers.map((w) => w.devices.filter((d) => d.kind === kind).length));
    const field = resources.gpus > most('gpu') ? 'resources.gpus' : 'resources.cpu_slots';
    throw new AppError(
      ErrorCode.UNSCHEDULABLE,
      `No worker can run this job: it asks for ${resources.gpus} GPU(s) and ${resources.cpu_slots} CPU slot(s); the largest worker has ${most('gpu')} GPU(s), and ${most('cpu')} CPU slot(s) at most (the workers this cluster has known)`,
      { field },
    );
  }

  private shardUrls(url: string, shards: number): string[] {
    try {
      return shardUrls(url, shards);
    } catch (error) {
      const field = isEnvironmentError(error) && error.field === 'shards' ? 'environment.shards' : 'environment.url';
      throw invalid(field, (error as Error).message);
    }
  }

  private async checkUrl(url: string, caller: Principal | undefined, use: RemoteUrlUse): Promise<void> {
    try {
      await checkRemoteUrl(url, urlPolicyFor(this.config, caller ? isAdmin(caller) : false), use);
    } catch (error) {
      if (error instanceof UrlNotAllowedError) throw new AppError(ErrorCode.URL_NOT_ALLOWED, error.message, { field: use.field });
      throw error;
    }
  }

  private checkEnvironment(environment: NonNullable<RlSpecParts['environment']>): void {
    const registry = this.registry();
    // A server without the registry (a worker-only process) leaves the check to the job runner.
    if (!registry) return;
    const loaded = registry.list().filter((r) => r.status === 'loaded' && r.environment);
    const record = loaded.find((r) => r.id === environment.id);
    if (!record?.environment)
      throw unknownEnvironment(
        environment.id,
        loaded.map((r) => r.id),
      );
    const env = record.environment;
    // The runner fills in the real files; here a stand-in lets the schema see that a dataset is given.
    const datasets = datasetFiles(environment, env, (id) => `dataset:${id}`);
    tenantEnvironmentConfig(env, environment.config ?? {}, { ...this.config.environmentHost, datasets });
  }

  /** `environment.dataset` / `val_dataset`: the caller's own uploads, checked for rows this environment reads. */
  private async checkDatasets(environment: NonNullable<RlSpecParts['environment']>, caller: Principal): Promise<void> {
    refuseDatasetsOfRemote(environment);
    for (const key of ['dataset', 'val_dataset'] as const) {
      const id = environment[key];
      if (id === undefined) continue;
      const datasets = this.optional(DatasetsService);
      if (datasets) await datasets.assertUsable(caller, id, `environment.${key}`, environment.id);
    }
  }

  private async checkJobPath(path: string, visibleJob: (id: string) => Promise<JobEntity>): Promise<void> {
    const m = JOB_PATH.exec(path);
    if (!m) throw invalid('model.path', `model.path ${path} must be job:<job id> or job:<job id>/step-<n>`);
    let job: JobEntity;
    try {
      job = await visibleJob(m[1]);
    } catch (error) {
      if (error instanceof AppError && error.code === ErrorCode.NOT_FOUND) throw invalid('model.path', `No job ${m[1]} of yours to take a model from`);
      throw error;
    }
    if (!findJobKind(job.kind)?.checkpoints) throw invalid('model.path', `Job ${m[1]} is a ${job.kind} job; only ${kindList(kindsWith('checkpoints'))} jobs save checkpoints`);
  }

  /** `model:<id>`: a model folder the caller uploaded; anyone else's (or none) is 404, as on the models routes. */
  private async checkUserModel(path: string, caller: Principal | undefined): Promise<void> {
    const id = parseUserModelRef(path);
    const models = this.optional(UserModelsRepository);
    // A process without the table's module (a worker-only one) leaves the check to the job runner.
    if (id !== null && !models) return;
    const model = id === null ? null : await models!.findById(id);
    if (!model || (caller !== undefined && model.ownerId !== caller.userId)) {
      throw new AppError(
        ErrorCode.MODEL_NOT_FOUND,
        `model.path ${JSON.stringify(path)}: no uploaded model of yours has that name (${id === null ? 'expected model:<id>' : 'GET /v1/models lists yours'})`,
        { field: 'model.path' },
      );
    }
  }

  private registry(): EnvironmentRegistry | null {
    return this.optional(EnvironmentRegistry);
  }

  /** A provider of another module, or null where this process does not have it (a worker-only one). */
  private optional<T>(token: new (...args: never[]) => T): T | null {
    try {
      return this.modules.get(token, { strict: false });
    } catch {
      return null;
    }
  }
}

function invalid(field: string, message: string): AppError {
  return new AppError(ErrorCode.VALIDATION, message, { field });
}
