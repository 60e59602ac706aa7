import type { components, operations } from './generated/schema';

type Schemas = components['schemas'];

/** A job as the server reports it (`JobDto`), with its stored spec. */
export type Job = Schemas['JobDto'];
/** A job as listings report it (`JobSummaryDto`): every field of a {@link Job} but `spec`. */
export type JobSummary = Schemas['JobSummaryDto'];
/** A job's lifecycle state. */
export type JobState = Job['state'];
/** One page of {@link JobSummary}s (`jobs.list`); `jobs.get` gives one job with its spec. */
export type JobPage = Schemas['JobPageDto'];
/** A job's last reported progress. */
export type JobProgress = Schemas['JobProgressDto'];
/**
 * The body of `POST /v1/jobs`: a union over the job kinds the server offers, discriminated by `kind`.
 * It grows by itself when the server gains kinds and `openapi.json` is regenerated.
 */
export type JobSpec = NonNullable<operations['Jobs_submit']['requestBody']>['content']['application/json'];
/** The job kinds this client version knows. */
export type JobKind = JobSpec['kind'];
/** A kind of job the server runs and what its jobs can do (`jobs.kinds()`): decide by these, not by kind name. */
export type JobKindInfo = Schemas['JobKindDto'];
/** Query of `GET /v1/jobs`. */
export interface ListJobsQuery {
  page?: number;
  limit?: number;
  /** Only jobs in these states. */
  state?: JobState[];
  kind?: string;
}
/** One metric value at one step. */
export type MetricPoint = Schemas['MetricPointDto'];
/** Query of `GET /v1/jobs/:id/metrics`. */
export type MetricsQuery = NonNullable<operations['Jobs_metrics']['parameters']['query']>;
/** A file a job published. */
export type Artifact = Schemas['ArtifactDto'];
/** A saved checkpoint of a job (`GET /v1/jobs/:id/checkpoints`). */
export type Checkpoint = Schemas['CheckpointDto'];

/** The body of `POST /v1/chat/completions` (OpenAI's chat completion request). */
export type ChatRequest = Schemas['ChatCompletionRequestDto'];
/** One chat message of a {@link ChatRequest}. */
export type ChatMessage = Schemas['ChatMessageDto'];
/** OpenAI's `chat.completion`. */
export type ChatCompletion = Schemas['ChatCompletionDto'];
/** OpenAI's `chat.completion.chunk`: one event of a streamed answer. */
export type ChatChunk = Schemas['ChatCompletionChunkDto'];
/** `GET /v1/models`: the checkpoints, uploaded models and Hub models a user can name. */
export type ModelList = Schemas['ModelListDto'];
/** One entry of a {@link ModelList} (`GET /v1/models/{id}`). */
export type Model = Schemas['ModelDto'];
/** A model folder the user uploaded (`model:<id>`). */
export type UploadedModel = Schemas['UserModelDto'];
/** OpenAI's answer to deleting a model. */
export type DeletedModel = Schemas['DeletedModelDto'];
/** The body of `POST /v1/completions` (OpenAI's legacy completion request). */
export type CompletionRequest = Schemas['CompletionRequestDto'];
/** OpenAI's `text_completion`. */
export type Completion = Schemas['CompletionDto'];

export type User = Schemas['UserDto'];
export type CreateUser = Schemas['CreateUserDto'];
/** A new user and its first API key (shown once). */
export type CreatedUser = Schemas['CreatedUserDto'];
/** An API key, without its secret. */
export type ApiKey = Schemas['ApiKeyDto'];
/** A new API key with its secret (shown once). */
export type IssuedKey = Schemas['IssuedKeyDto'];

/** An uploaded dataset; name its `id` in a job spec as `environment.dataset` or `environment.val_dataset`. */
export type Dataset = Schemas['DatasetDto'];
export type DatasetFormat = Dataset['format'];
export type DatasetPage = Schemas['DatasetPageDto'];
/** What the upload check found: rows, valid rows, the first 20 bad rows (line and reason), columns. */
export type DatasetReport = Schemas['DatasetReportDto'];
/** The answer to an upload: the stored dataset and its report. */
export type UploadedDataset = Schemas['UploadedDatasetDto'];
export type DatasetPreview = Schemas['DatasetPreviewDto'];

export type EnvironmentSummary = Schemas['EnvironmentSummaryDto'];
export type EnvironmentDetail = Schemas['EnvironmentDetailDto'];
/** One live worker and its devices. */
export type WorkerDevices = Schemas['WorkerDevicesDto'];
export type Device = Schemas['DeviceDto'];
export type Liveness = Schemas['LivenessDto'];
export type Readiness = Schemas['ReadinessDto'];

/**
 * One event of a job's stream (`GET /v1/jobs/:id/events`). `id` orders events and resumes a stream;
 * `data.time` is when the server recorded it. The payloads are not part of the OpenAPI document (an
 * event stream has no schema there), so they are written out here.
 */
export type JobEvent =
  | { type: 'state'; id: number; data: { state: JobState; time: string; [detail: string]: unknown } }
  | { type: 'progress'; id: number; data: { step: number; total: number | null; message: string | null; time: string } }
  | { type: 'metrics'; id: number; data: { points: { step: number; name: string; value: number }[]; time: string } }
  | { type: 'log'; id: number; data: { text: string; time: string } }
  | { type: 'artifact'; id: number; data: { name: string; size: number; time: string } }
  /** The last event: the job has ended and every event before this one was delivered. */
  | { type: 'end'; id?: undefined; data: { state: JobState | null } }
  /** An event type this client version does not know yet (a newer server's), passed through as is. */
  | { type: 'other'; event: string; id?: number; data: unknown };

/** The event types this client version knows. */
export const JOB_EVENT_TYPES = ['state', 'progress', 'metrics', 'log', 'artifact', 'end'] as const;

/** One call of a training session (`SessionCallDto`). */
export type SessionCall = Schemas['SessionCallDto'];
/** The operations a session answers. */
export type SessionOp = SessionCall['op'];
/** The spec of a `session` job. */
export type SessionSpec = Extract<JobSpec, { kind: 'session' }>;
