/**
 * What the `model` of a chat request may say: `<job id>` (its latest checkpoint), `<job id>/step-<n>`,
 * a job's name (unique among the caller's jobs), `<name>/step-<n>`, or any of these after `job:` (as a
 * job spec's `model.path` writes them).
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

/** The canonical name of one checkpoint, as responses and `GET /v1/models` give it. */
export function checkpointModelId(jobId: string, step: number): string {
  return `${jobId}/step-${step}`;
}
