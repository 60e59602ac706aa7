import { z } from 'zod';

/**
 * Spec parts shared by the kinds that run a language model against an environment (`train`,
 * `inference`). Key names follow verl / OpenTinker so that their configs mean the same thing here.
 */

/** One task of an OpenTinker game server: the env kwargs of one `/reset`. */
const openTinkerTask = z.record(z.string(), z.unknown());

/**
 * Which environment, with what config; `url` means a remote environment server (docs/design.md section 2),
 * speaking our protocol (`opentinker env serve`) or, with `protocol: opentinker`, OpenTinker's game-server
 * protocol (docs/opentinker-protocol.md).
 */
export const environmentSpec = z
  .object({
    id: z
      .string()
      .min(1)
      .max(128)
      .optional()
      .describe('Environment id (GET /v1/environments), e.g. math, math-tool, gomoku; optional with protocol opentinker (a name for listings)'),
    config: z
      .record(z.string(), z.unknown())
      .default({})
      .describe("The environment's config (validated by its schema when the job starts); with protocol opentinker, env kwargs sent with every /reset"),
    url: z.url().optional().describe('Base URL of a remote environment server (opentinker env serve, or an OpenTinker game server); default: the plugin in-process'),
    protocol: z
      .enum(['opentinker-v1', 'opentinker'])
      .optional()
      .describe(
        "What the server at url speaks: opentinker-v1 (default: this project's /v1 protocol, opentinker env serve) or opentinker (OpenTinker's game-server protocol: /reset, /step, /finalize, /stats)",
      ),
    shards: z
      .number()
      .int()
      .min(1)
      .max(256)
      .optional()
      .describe("protocol opentinker: game servers on consecutive ports from the url's port (OpenTinker's --shards / env_shards); each episode goes to one"),
    tasks: z
      .object({
        train: z.array(openTinkerTask).min(1).max(10_000).optional(),
        test: z.array(openTinkerTask).min(1).max(10_000).optional(),
      })
      .strict()
      .optional()
      .describe('protocol opentinker: the env kwargs of each task, per split; a split without a list is endless, each task {} (the game draws its start)'),
    token: z.string().min(1).max(4096).optional().describe('Bearer token of the remote environment server'),
    dataset: z.uuid().optional().describe('An uploaded dataset (POST /v1/datasets) used as the train split'),
    val_dataset: z.uuid().optional().describe('An uploaded dataset used as the test split'),
  })
  .strict()
  .superRefine((e, ctx) => {
    const openTinker = e.protocol === 'opentinker';
    if (!openTinker && e.id === undefined) ctx.addIssue({ code: 'custom', message: 'environment.id is required (it may be left out only with protocol opentinker)', path: ['id'] });
    if (openTinker && e.url === undefined) ctx.addIssue({ code: 'custom', message: 'protocol opentinker needs environment.url (the game server)', path: ['url'] });
    for (const key of ['shards', 'tasks'] as const) {
      if (!openTinker && e[key] !== undefined) ctx.addIssue({ code: 'custom', message: `environment.${key} applies to protocol opentinker only`, path: [key] });
    }
  });

/** The spec keys naming uploaded datasets, and the split each one becomes. */
export const DATASET_SPLITS = { dataset: 'train', val_dataset: 'test' } as const;

export const loraSpec = z
  .object({
    rank: z.number().int().min(1).max(1024).default(8),
    alpha: z.number().positive().default(16),
    target_modules: z.array(z.string().min(1)).min(1).default(['q_proj', 'k_proj', 'v_proj', 'o_proj']),
  })
  .strict();

/**
 * The policy: a built-in preset (random init), a Hugging Face repo (`hf:Org/Name[@revision]`), a model
 * folder, or a checkpoint of one of your jobs (`job:<id>` for its latest, `job:<id>/step-<n>` for one).
 */
export const modelSpec = z
  .object({
    preset: z.string().min(1).optional().describe('Built-in preset with random weights, e.g. tiny-char'),
    path: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .describe(
        "hf:Org/Name[@revision] (a Hugging Face repo, fetched into the worker's cache), job:<id>[/step-<n>] (a checkpoint of one of your jobs), model:<id> (a model folder you uploaded, POST /v1/models), or a model folder on the worker under model_roots",
      ),
    hf_token: z
      .string()
      .min(1)
      .max(4096)
      .regex(/^[\x21-\x7e]+$/, 'a token is printable ASCII without spaces')
      .optional()
      .describe(
        'Your Hugging Face token, for a private or gated hf: repo (the CLI sends HF_TOKEN). Kept apart from the spec, never shown, sent to the Hub only; what it fetches is yours alone',
      ),
    lora: loraSpec.optional().describe('Train LoRA adapters with the base frozen (PEFT layout)'),
    chat_template: z
      .enum(['auto', 'chatml', 'plain'])
      .default('auto')
      .describe("auto: the folder's template (ChatML for presets); plain: message contents joined, no role markers (tiny models)"),
    seed: z.number().int().min(0).default(0).describe('Seed of the random init of a preset'),
    context_length: z
      .number()
      .int()
      .min(16)
      .max(32768)
      .optional()
      .describe("A preset's context in tokens instead of its own (tiny-char: 128); rotary positions need no new weights. Presets only"),
  })
  .strict()
  .refine((m) => (m.preset === undefined) !== (m.path === undefined), { message: 'Give exactly one of model.preset and model.path', path: ['preset'] })
  .refine((m) => m.hf_token === undefined || m.path?.startsWith('hf:') === true, { message: 'model.hf_token applies to an hf: model.path only', path: ['hf_token'] })
  // A loaded model's positions were trained up to its own max_position_embeddings: lengthening it
  // silently would be a different model.
  .refine((m) => m.context_length === undefined || m.preset !== undefined, {
    message: "model.context_length applies to presets only; a model folder's context is its config.json max_position_embeddings",
    path: ['context_length'],
  });

/** How responses are sampled and how long an episode may run. */
export const rolloutSpec = z
  .object({
    temperature: z.number().min(0).max(10).default(1),
    top_p: z.number().gt(0).max(1).default(1),
    top_k: z.number().int().min(0).default(0).describe('0: off'),
    max_new_tokens: z.number().int().min(1).max(32768).default(64).describe('Token cap per turn'),
    max_turns: z.number().int().min(1).max(1000).default(1).describe('Most model turns per episode (multi-turn environments)'),
    max_response_tokens: z.number().int().min(1).max(1_000_000).optional().describe('Total budget of generated + environment tokens after the prompt (default: the context left)'),
    stop: z.array(z.string().min(1).max(64)).max(16).default([]).describe('Stop strings (kept in the response)'),
    env_concurrency: z.number().int().min(1).max(256).default(8).describe('Environment calls in flight at once'),
    env_timeout_seconds: z.number().positive().max(3600).default(30).describe('Per environment call'),
    env_retries: z.number().int().min(0).max(10).default(2).describe('Retries of a failed environment call before the episode counts as failed'),
  })
  .strict();

export type EnvironmentSpec = z.output<typeof environmentSpec>;
export type ModelSpec = z.output<typeof modelSpec>;
export type RolloutSpec = z.output<typeof rolloutSpec>;
