/**
 * A job's Hugging Face token from the shell that submits it, as huggingface_hub reads it: `HF_TOKEN` (or
 * the older `HUGGING_FACE_HUB_TOKEN`) becomes `model.hf_token` when `model.path` names an `hf:` repo, so
 * the worker fetches a private or gated repo as the submitting user, never with the server's token. Never
 * over what the spec says itself. Returns the spec to submit and notes for the user (never the token).
 */
export function withHubToken(spec: Record<string, unknown>, env: NodeJS.ProcessEnv): { spec: Record<string, unknown>; notes: string[] } {
  const model = spec.model as Record<string, unknown> | undefined;
  if (typeof model?.path !== 'string' || !model.path.startsWith('hf:') || model.hf_token !== undefined) return { spec, notes: [] };
  const token = env.HF_TOKEN?.trim() || env.HUGGING_FACE_HUB_TOKEN?.trim();
  if (!token) return { spec, notes: [] };
  return {
    spec: { ...spec, model: { ...model, hf_token: token } },
    notes: [`Hugging Face: ${model.path} is fetched with HF_TOKEN from this shell; the server keeps the token apart, never shows it, and deletes it when the job ends`],
  };
}
