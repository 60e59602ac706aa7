/** The backends of verl's `trainer.logger` that a train job can write to (docs/metrics.md). */
export const METRIC_LOGGERS = ['console', 'tensorboard', 'wandb'] as const;
export type MetricLoggerName = (typeof METRIC_LOGGERS)[number];

/** W&B's own server, the wandb SDK's default WANDB_BASE_URL. */
export const WANDB_CLOUD = 'https://api.wandb.ai';
