import { CheckpointsListResponse, GetSamplerResponse, GetServerCapabilitiesResponse, TrainingRun, TrainingRunsResponse, WeightsInfoResponse } from '@opentinker/tinker-wire';
import { OpenTinkerError } from '../errors';
import { parseAnswer, type AnswerSchema } from './tinker-context';
import { badResponse, errorOf, readJson, type TinkerHttp } from './tinker-http';
import {
  camelize,
  type CheckpointsListResponse as CheckpointList,
  type GetSamplerResponse as SamplerInfo,
  type GetServerCapabilitiesResponse as Capabilities,
  type TrainingRun as Run,
  type TrainingRunsResponse as RunList,
  type WeightsInfoResponse as WeightsInfo,
} from './tinker-types';

/** A page of a listing. */
export interface ListOptions {
  limit?: number;
  offset?: number;
  signal?: AbortSignal;
}

/** Where a checkpoint's files can be fetched from, and until when. */
export interface CheckpointArchiveUrl {
  url: string;
  expires: Date;
}

/** A `tinker://` path's parts. */
export interface TinkerPathParts {
  /** The training run: the model id that saved it. */
  trainingRunId: string;
  /** `weights/<name>` or `sampler_weights/<name>`. */
  checkpointId: string;
}

/** How long a download URL answered by a redirect without `Expires` is taken to last (the SDK's assumption). */
const REDIRECT_URL_LIFETIME_MS = 15 * 60_000;

/**
 * The Tinker REST plane (the SDK's `RestClient`): your training runs (one per training client) and
 * their checkpoints. Another user's runs and checkpoints answer 404.
 *
 * @example
 * ```ts
 * const rest = service.createRestClient();
 * for (const c of (await rest.listCheckpoints(training.modelId)).checkpoints) console.log(c.tinkerPath, c.sizeBytes);
 * await rest.deleteCheckpointFromTinkerPath('tinker://…/sampler_weights/old');
 * ```
 */
export class TinkerRestClient {
  constructor(private readonly http: TinkerHttp) {}

  getServerCapabilities(options: { signal?: AbortSignal } = {}): Promise<Capabilities> {
    return this.get(GetServerCapabilitiesResponse, 'get_server_capabilities', 'the server capabilities', options.signal);
  }

  /** Your training runs, newest first. */
  listTrainingRuns(options: ListOptions = {}): Promise<RunList> {
    return this.get(TrainingRunsResponse, `training_runs?${pageQuery(options, 20)}&access_scope=owned`, 'the training runs', options.signal);
  }

  /** One training run (a model id): its base, LoRA rank, last checkpoints. */
  getTrainingRun(trainingRunId: string, options: { signal?: AbortSignal } = {}): Promise<Run> {
    return this.get(TrainingRun, `training_runs/${encodeURIComponent(trainingRunId)}?access_scope=owned`, 'a training run', options.signal);
  }

  /** The training run that saved a checkpoint. */
  getTrainingRunByTinkerPath(tinkerPath: string, options: { signal?: AbortSignal } = {}): Promise<Run> {
    return this.getTrainingRun(parseTinkerPath(tinkerPath).trainingRunId, options);
  }

  /** A training run's checkpoints (`weights` and `sampler_weights`). */
  listCheckpoints(trainingRunId: string, options: { signal?: AbortSignal } = {}): Promise<CheckpointList> {
    return this.get(CheckpointsListResponse, `training_runs/${encodeURIComponent(trainingRunId)}/checkpoints`, 'the checkpoints', options.signal);
  }

  /** All your checkpoints, a page at a time. */
  listUserCheckpoints(options: ListOptions = {}): Promise<CheckpointList> {
    return this.get(CheckpointsListResponse, `checkpoints?${pageQuery(options, 100)}`, 'the checkpoints', options.signal);
  }

  /** A checkpoint's base model and LoRA config. */
  async getWeightsInfoByTinkerPath(tinkerPath: string, options: { signal?: AbortSignal } = {}): Promise<WeightsInfo> {
    return camelize(parseAnswer(WeightsInfoResponse, await this.http.json('POST', 'weights_info', { tinker_path: tinkerPath }, options), 'the weights info'));
  }

  /** A sampler's base model and checkpoint path. */
  getSampler(samplerId: string, options: { signal?: AbortSignal } = {}): Promise<SamplerInfo> {
    return this.get(GetSamplerResponse, `samplers/${encodeURIComponent(samplerId)}`, 'a sampler', options.signal);
  }

  /** Deletes a checkpoint (`weights/<name>` or `sampler_weights/<name>`) of a training run. */
  async deleteCheckpoint(trainingRunId: string, checkpointId: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.http.json(
      'DELETE',
      `training_runs/${encodeURIComponent(trainingRunId)}/checkpoints/${checkpointId.split('/').map(encodeURIComponent).join('/')}`,
      undefined,
      options,
    );
  }

  /** Deletes the checkpoint at a `tinker://` path. */
  deleteCheckpointFromTinkerPath(tinkerPath: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    const { trainingRunId, checkpointId } = parseTinkerPath(tinkerPath);
    return this.deleteCheckpoint(trainingRunId, checkpointId, options);
  }

  /**
   * A URL to download a checkpoint's files as one archive, as the SDK's `get_checkpoint_archive_url` reads
   * it (a redirect to the URL, or `{url, expires}`). OpenTinker's URL works without a key until it
   * expires (15 minutes) and fetches an uncompressed tar of the checkpoint's files; a server without the
   * route answers 404.
   */
  async getCheckpointArchiveUrlFromTinkerPath(tinkerPath: string, options: { signal?: AbortSignal } = {}): Promise<CheckpointArchiveUrl> {
    const { trainingRunId, checkpointId } = parseTinkerPath(tinkerPath);
    const path = `training_runs/${encodeURIComponent(trainingRunId)}/checkpoints/${checkpointId.split('/').map(encodeURIComponent).join('/')}/archive`;
    const response = await this.http.attempt('GET', path, undefined, { signal: options.signal, redirect: 'manual', headers: { accept: 'application/json' } });
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      const expires = Date.parse(response.headers.get('expires') ?? '');
      return { url: new URL(location, response.url || this.http.baseUrl).toString(), expires: new Date(Number.isNaN(expires) ? Date.now() + REDIRECT_URL_LIFETIME_MS : expires) };
    }
    if (!response.ok) throw await errorOf(response);
    const body = (await readJson(response)) as { url?: unknown; expires?: unknown };
    if (typeof body.url !== 'string') throw badResponse(response, 'an archive answer without a url');
    const expires = typeof body.expires === 'string' || typeof body.expires === 'number' ? new Date(body.expires) : new Date(Date.now() + REDIRECT_URL_LIFETIME_MS);
    return { url: body.url, expires };
  }

  private async get<T>(schema: AnswerSchema<T>, path: string, what: string, signal?: AbortSignal) {
    return camelize(parseAnswer(schema, await this.http.json('GET', path, undefined, { signal }), what));
  }
}

/**
 * The parts of `tinker://<training run>/<weights|sampler_weights>/<name>`, or `OT_ERR_INVALID_INPUT`.
 *
 * @example
 * ```ts
 * parseTinkerPath('tinker://s1:train:0/weights/ckpt-a'); // { trainingRunId: 's1:train:0', checkpointId: 'weights/ckpt-a' }
 * ```
 */
export function parseTinkerPath(tinkerPath: string): TinkerPathParts {
  const match = /^tinker:\/\/([^/]+)\/(weights|sampler_weights|external_weights)\/([^/]+)$/.exec(tinkerPath);
  if (!match)
    throw new OpenTinkerError('OT_ERR_INVALID_INPUT', `${JSON.stringify(tinkerPath)} is not a tinker://<training run>/<weights|sampler_weights>/<name> path`, 0, {
      field: 'tinker_path',
    });
  return { trainingRunId: match[1], checkpointId: `${match[2]}/${match[3]}` };
}

function pageQuery(options: ListOptions, defaultLimit: number): string {
  return `limit=${options.limit ?? defaultLimit}&offset=${options.offset ?? 0}`;
}
