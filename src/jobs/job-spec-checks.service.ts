import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { MODEL_PRESETS } from '@opentinker/engine';
import { isEnvironmentError, parseConfig } from '@opentinker/env-sdk';
import type { Principal } from '../auth/principal';
import { AppError, ErrorCode } from '../core/app-error';
import { DatasetsService } from '../datasets/datasets.service';
import { EnvironmentRegistry } from '../registry/environment-registry.service';
import type { JobEntity } from './job.entity';

/** Kinds whose jobs save checkpoints that `model.path: job:<id>` can name. */
const CHECKPOINTING_KINDS = new Set(['train', 'session']);
const JOB_PATH = /^job:([0-9a-fA-F-]{36})(?:\/step-\d+)?$/;

interface RlSpecParts {
  environment?: { id: string; url?: string; config?: Record<string, unknown>; dataset?: string; val_dataset?: string };
  model?: { preset?: string; path?: string };
}

/**
 * Checks of a parsed job spec that need more than its schema, so a bad spec fails at submission with
 * 400 and the field instead of minutes later in a job runner: the environment id and its config (local
 * environments), the model preset, and a `job:<id>` model path the caller may use.
 */
@Injectable()
export class JobSpecChecksService {
  constructor(private readonly modules: ModuleRef) {}

  /** `visibleJob` is the caller's access check (JobsService.get): someone else's job is not found. */
  async check(spec: Record<string, unknown>, visibleJob: (id: string) => Promise<JobEntity>, caller?: Principal): Promise<void> {
    const { environment, model } = spec as RlSpecParts;
    if (environment && environment.url === undefined) this.checkEnvironment(environment);
    if (environment && caller) await this.checkDatasets(environment, caller);
    if (model?.preset !== undefined && !Object.prototype.hasOwnProperty.call(MODEL_PRESETS, model.preset)) {
      throw invalid('model.preset', `Unknown model preset ${model.preset} (known: ${Object.keys(MODEL_PRESETS).join(', ')})`);
    }
    if (model?.path?.startsWith('job:')) await this.checkJobPath(model.path, visibleJob);
  }

  private checkEnvironment(environment: NonNullable<RlSpecParts['environment']>): void {
    const registry = this.registry();
    // A server without the registry (a worker-only process) leaves the check to the job runner.
    if (!registry) return;
    const loaded = registry.list().filter((r) => r.status === 'loaded' && r.environment);
    const record = loaded.find((r) => r.id === environment.id);
    if (!record?.environment) {
      throw invalid('environment.id', `Unknown environment ${environment.id} (known: ${loaded.map((r) => r.id).join(', ') || 'none'})`);
    }
    try {
      parseConfig(record.environment, environment.config ?? {});
    } catch (error) {
      const field = isEnvironmentError(error) && error.field ? `environment.${error.field}` : 'environment.config';
      throw invalid(field, (error as Error).message);
    }
  }

  /** `environment.dataset` / `val_dataset`: the caller's own uploads, checked for rows this environment reads. */
  private async checkDatasets(environment: NonNullable<RlSpecParts['environment']>, caller: Principal): Promise<void> {
    for (const key of ['dataset', 'val_dataset'] as const) {
      const id = environment[key];
      if (id === undefined) continue;
      if (environment.url !== undefined) {
        throw invalid(`environment.${key}`, `environment.${key}: uploaded datasets live on this server; a remote environment (environment.url) cannot read them`);
      }
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
    if (!CHECKPOINTING_KINDS.has(job.kind)) throw invalid('model.path', `Job ${m[1]} is a ${job.kind} job; only train and session jobs save checkpoints`);
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
