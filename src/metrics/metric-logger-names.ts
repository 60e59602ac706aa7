/** The backends of verl's `trainer.logger` that a train job can write to (docs/metrics.md). */
export const METRIC_LOGGERS = ['console', 'tensorboard', 'wandb'] as const;
export type MetricLoggerName = (typeof METRIC_LOGGERS)[number];

/** W&B's own server, the wandb SDK's default WANDB_BASE_URL. */
export const WANDB_CLOUD = 'https://api.wandb.ai';

/**
 * A W&B project or entity name: what the wandb SDK accepts (none of / \ # ? % :, no control characters,
 * at most 128 characters). Names go into W&B's request paths and the job log, whether a user or a W&B
 * server gave them.
 */
export const WANDB_NAME = /^[^/\\#?%:\u0000-\u001f\u007f]{1,128}$/;
