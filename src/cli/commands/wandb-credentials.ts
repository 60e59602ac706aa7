/**
 * A train job's W&B settings from the shell that submits it, as the wandb SDK reads them: WANDB_API_KEY
 * (the job streams its run to W&B with the submitting user's key), WANDB_BASE_URL (a self-hosted W&B)
 * and WANDB_ENTITY. `WANDB_MODE=offline` or `disabled` keeps the key here (the run is written offline
 * only, as the SDK would). Only for a train job whose `trainer.logger` names wandb, and never over what
 * the spec says itself. Returns the spec to submit and notes for the user (never the key).
 */
export function withWandbCredentials(spec: Record<string, unknown>, env: NodeJS.ProcessEnv): { spec: Record<string, unknown>; notes: string[] } {
  const trainer = spec.trainer as { logger?: unknown; wandb?: Record<string, unknown> } | undefined;
  const loggers = Array.isArray(trainer?.logger) ? trainer.logger : [trainer?.logger];
  if (spec.kind !== 'train' || !loggers.includes('wandb')) return { spec, notes: [] };
  const given = trainer!.wandb ?? {};
  const mode = env.WANDB_MODE?.trim().toLowerCase();
  const key = env.WANDB_API_KEY?.trim();
  if (given.api_key !== undefined) return { spec, notes: [] };
  if (mode === 'offline' || mode === 'disabled' || mode === 'dryrun') {
    return { spec, notes: [`W&B: WANDB_MODE=${mode}: the run is written offline only (the job's artifact wandb-offline-run-….tar, for \`wandb sync\`)`] };
  }
  if (!key) return { spec, notes: ["W&B: no WANDB_API_KEY in this shell: the run is written offline only (the job's artifact wandb-offline-run-….tar, for `wandb sync`)"] };
  const wandb: Record<string, unknown> = { ...given, api_key: key };
  const baseUrl = env.WANDB_BASE_URL?.trim();
  if (wandb.base_url === undefined && baseUrl) wandb.base_url = baseUrl.replace(/\/+$/, '');
  const entity = env.WANDB_ENTITY?.trim();
  if (wandb.entity === undefined && entity) wandb.entity = entity;
  const where = `${wandb.base_url === undefined ? 'W&B' : `the W&B at ${String(wandb.base_url)}`}${wandb.entity ? ` (entity ${String(wandb.entity)})` : ''}`;
  return {
    spec: { ...spec, trainer: { ...trainer, wandb } },
    notes: [`W&B: the run streams to ${where} with WANDB_API_KEY from this shell; the server keeps the key apart and never shows it`],
  };
}
