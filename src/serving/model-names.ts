/**
 * What the `model` of a chat or completion request may say of a checkpoint: `job:<job id>` (its latest
 * checkpoint) or `job:<job id>/step-<n>`, the names answers and `GET /v1/models` give, as a job spec's
 * `model.path` writes them; also without `job:`, and a job's name (unique among the caller's jobs),
 * optionally `/step-<n>`.
 *
 * @example
 * ```ts
 * parseModelName('job:4f0c8b1e-…/step-20'); // { by: 'id', ref: '4f0c8b1e-…', step: 20 }
 * parseModelName('math-grpo');              // { by: 'name', ref: 'math-grpo', step: null }
 * ```
 */
export interface ModelName {
  by: 'id' | 'name';
  ref: string;
  /** null: the latest checkpoint. */
  step: number | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const WITH_STEP = /^(.+)\/step-(0|[1-9]\d{0,14})$/;

export function parseModelName(model: string): ModelName | null {
  let rest = model.trim();
  if (rest.startsWith('job:')) rest = rest.slice(4);
  let step: number | null = null;
  const m = WITH_STEP.exec(rest);
  if (m) {
    rest = m[1];
    step = Number(m[2]);
  }
  if (rest.length === 0 || rest.length > 128) return null;
  if (UUID.test(rest)) return { by: 'id', ref: rest.toLowerCase(), step };
  return { by: 'name', ref: rest, step };
}

/** The canonical name of one checkpoint, as responses, `GET /v1/models`, the CLI and job specs' `model.path` write it. */
export function checkpointModelId(jobId: string, step: number): string {
  return `job:${jobId}/step-${step}`;
}
