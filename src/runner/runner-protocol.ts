import { HOST_LIMITS, HOST_SETTINGS } from '@opentinker/env-sdk';
import { z } from 'zod';
import { UrlPolicy } from '../egress/egress-policy';
import { HubUse } from '../hub/hub-access';
import { HubSettings } from '../hub/hub-settings';
import { JobHubAccess } from '../hub/job-hub';
import { EngineSettingsMessage } from './engine-settings-message';

/**
 * Messages between a worker and the job runner child process it spawned (Node IPC channel), as zod
 * schemas each side parses on receipt: the runner runs plugin code, so what it sends is input. Logs do
 * not travel here: the runner's stdout and stderr are the job's log.
 */

export const WandbStreamSettings = z.object({ streamSeconds: z.number(), finishSeconds: z.number() });
export type WandbStreamSettings = z.output<typeof WandbStreamSettings>;

/**
 * The operator's limits a job runner applies to the (tenant-written) spec it runs, on the machine that
 * opens the files and connections. The API checks the same rules at submission; the runner checks them
 * again where links are followed and names are resolved.
 */
export const RunnerPolicy = z.object({
  /** Sandbox ceilings and operator values for the environment's config (`resolveTenantConfig`). */
  environmentHost: z.object({
    limits: z.partialRecord(z.enum(HOST_LIMITS), z.number()),
    settings: z.partialRecord(z.enum(HOST_SETTINGS), z.union([z.string(), z.number(), z.boolean()])),
  }),
  /** Folders `model.path` may name (setting model_roots); the job's own folder is added by the runner. */
  modelRoots: z.array(z.string()),
  /** Which remote environment servers the job may connect to. */
  remoteEnvironments: UrlPolicy,
  /** How `hf:` models are fetched on this worker (its own cache, endpoint, token, limit). */
  hub: HubSettings.optional(),
  /** What the job's owner may use from the Hub cache, and may still download (see JobHub). */
  hubAccess: JobHubAccess.optional(),
  /** How a job streams to W&B (settings wandb_stream_seconds, wandb_finish_seconds); absent: their defaults. */
  wandb: WandbStreamSettings.optional(),
});
export type RunnerPolicy = z.output<typeof RunnerPolicy>;

/** The first message a runner gets: the job, where to work, and the worker's settings for it. */
export const StartMessage = z.object({
  type: z.literal('start'),
  job: z.object({ id: z.string(), kind: z.string(), spec: z.record(z.string(), z.unknown()), attempt: z.number().int(), resumeState: z.unknown() }),
  workDir: z.string(),
  /** The data directory (`OPENTINKER_HOME`), the installation's folder and the plugins folder, as the worker resolved them. */
  paths: z.object({ home: z.string(), hostRoot: z.string(), pluginsDir: z.string() }),
  /** The worker's engine settings, threads defaulting to the job's CPU slots. */
  engine: EngineSettingsMessage,
  /** Setting runner_stacks: a failure's stack trace goes to the job's log. */
  stackTraces: z.boolean(),
  /** What the job's owner may reach on this worker, from the worker's settings. */
  policy: RunnerPolicy,
  /** Spec values kept out of the stored spec, by dotted path (`environment.token`); put back before the run. */
  secrets: z.record(z.string(), z.string()),
});
export type StartMessage = z.output<typeof StartMessage>;

/** A session call handed to the runner (worker → runner, after the start message). */
export const CallMessage = z.object({ type: z.literal('call'), id: z.number().int(), op: z.string(), args: z.record(z.string(), z.unknown()) });
export type CallMessage = z.output<typeof CallMessage>;

/** Worker → runner. */
export const ToRunner = z.discriminatedUnion('type', [StartMessage, CallMessage]);
export type ToRunner = z.output<typeof ToRunner>;

/**
 * A call's error that starts with this is the caller's mistake (a Tinker future fails with `category:
 * "user"`, which the SDK raises at once); any other error is the server's.
 */
export const USER_ERROR_PREFIX = 'user: ';

/**
 * Whose fault a failed job is: `user` when its inputs were refused (a model the Hub or the model roots
 * refuse, a limit it exceeds), `server` when something broke.
 */
export const FailureCategory = z.enum(['user', 'server']);
export type FailureCategory = z.output<typeof FailureCategory>;

/** Runner → worker. A metric that is not a finite number arrives as null (JSON has no NaN) and is not recorded. */
export const RunnerMessage = z.discriminatedUnion('type', [
  z.object({ type: z.literal('running') }),
  z.object({ type: z.literal('progress'), step: z.number(), total: z.number().nullable(), message: z.string().nullable() }),
  z.object({ type: z.literal('metrics'), step: z.number(), values: z.record(z.string(), z.number().nullable()) }),
  z.object({ type: z.literal('checkpoint'), state: z.unknown() }),
  z.object({ type: z.literal('resumed'), step: z.number(), keepPrefixes: z.array(z.string()) }),
  z.object({ type: z.literal('artifact'), name: z.string(), path: z.string() }),
  /** A Hub snapshot the job used: recorded for its owner (who may use it, the bytes downloaded). */
  z.object({ type: z.literal('hub'), use: HubUse }),
  z.object({ type: z.literal('failed'), message: z.string(), category: FailureCategory.optional() }),
  z.object({ type: z.literal('call-result'), id: z.number().int(), result: z.unknown().optional(), error: z.string().optional() }),
  z.object({ type: z.literal('done') }),
]);
export type RunnerMessage = z.output<typeof RunnerMessage>;
