import { datasetConfigKey, isEnvironmentError, resolveTenantConfig } from '@opentinker/env-sdk';
import type { Environment, HostConfigInput } from '@opentinker/env-sdk';
import { AppError, ErrorCode } from '../core/app-error';
import { environmentConfigError } from '../registry/tenant-config';
import { DATASET_SPLITS, type EnvironmentSpec } from './rl-spec';

/**
 * Checks of a spec's `environment` that the API runs at submission (a 400 naming the field) and the job
 * runner runs again before it opens the environment (the job's error, `field: message`): one
 * implementation and one set of messages. Each refusal is an {@link AppError} with the spec field.
 */

type EnvironmentParts = Pick<EnvironmentSpec, 'id' | 'url' | 'dataset' | 'val_dataset'>;

export function unknownEnvironment(id: string, known: ReadonlyArray<string | null>): AppError {
  return invalid('environment.id', `Unknown environment ${id} (known: ${known.join(', ') || 'none'})`);
}

/** Uploaded datasets are files of this server: a remote environment (`environment.url`) cannot read them. */
export function refuseDatasetsOfRemote(environment: EnvironmentParts): void {
  if (environment.url === undefined) return;
  for (const key of Object.keys(DATASET_SPLITS) as Array<keyof typeof DATASET_SPLITS>) {
    if (environment[key] !== undefined) {
      throw invalid(`environment.${key}`, `environment.${key}: uploaded datasets live on this server; a remote environment (environment.url) cannot read them`);
    }
  }
}

/**
 * The dataset file of each split the spec names an uploaded dataset for, refused where the environment
 * reads no dataset of that split. `file(id)` gives the path (the API, which has no files to give, a
 * stand-in); what it throws is reported at the spec key.
 */
export function datasetFiles(environment: EnvironmentParts, env: Environment<unknown, unknown>, file: (id: string) => string): NonNullable<HostConfigInput['datasets']> {
  const out: NonNullable<HostConfigInput['datasets']> = {};
  for (const [key, split] of Object.entries(DATASET_SPLITS) as Array<[keyof typeof DATASET_SPLITS, 'train' | 'test']>) {
    const id = environment[key];
    if (id === undefined) continue;
    if (datasetConfigKey(env, split) === null) throw invalid(`environment.${key}`, `environment ${env.id} reads no ${split} dataset`);
    try {
      out[split] = file(id);
    } catch (error) {
      throw invalid(`environment.${key}`, (error as Error).message);
    }
  }
  return out;
}

/**
 * The environment's config from the tenant's values under the operator's policy (no host-only keys,
 * values within the sandbox ceilings, then the environment's own schema); a refusal names
 * `environment.config.<key>` with the code of its kind (host-only, limit, invalid).
 */
export function tenantEnvironmentConfig(env: Environment<unknown, unknown>, config: Record<string, unknown>, host: HostConfigInput): unknown {
  try {
    return resolveTenantConfig(env, config, host);
  } catch (error) {
    if (isEnvironmentError(error)) throw environmentConfigError(error, 'environment.');
    throw error;
  }
}

/** A refusal as the job runner reports it: `field: message` (a message that starts with its field stays as it is). */
export function asJobError(error: unknown): unknown {
  if (!(error instanceof AppError) || error.field === undefined || error.message.startsWith(`${error.field}:`)) return error;
  return new Error(`${error.field}: ${error.message}`);
}

function invalid(field: string, message: string): AppError {
  return new AppError(ErrorCode.VALIDATION, message, { field });
}
