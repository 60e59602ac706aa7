/**
 * Spec paths whose values are secrets: a remote environment's bearer token, the submitting user's W&B
 * key and their Hugging Face token. They are stored apart from the spec (see JobSecretEntity),
 * encrypted, given only to the job runner, never shown by the API, and deleted when the job ends.
 */
export const SECRET_PATHS: ReadonlyArray<readonly string[]> = [
  ['environment', 'token'],
  ['trainer', 'wandb', 'api_key'],
  ['model', 'hf_token'],
];

/** The object holding the last key of `path`, when every step on the way is an object. */
function holderOf(spec: Record<string, unknown>, path: readonly string[]): Record<string, unknown> | null {
  let node: unknown = spec;
  for (const key of path.slice(0, -1)) {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) return null;
    node = (node as Record<string, unknown>)[key];
  }
  return node !== null && typeof node === 'object' && !Array.isArray(node) ? (node as Record<string, unknown>) : null;
}

/** The spec without its secrets, and the secrets by dotted path. */
export function takeSecrets(spec: Record<string, unknown>): { spec: Record<string, unknown>; secrets: Record<string, string> } {
  const secrets: Record<string, string> = {};
  if (!SECRET_PATHS.some((path) => typeof holderOf(spec, path)?.[path[path.length - 1]] === 'string')) return { spec, secrets };
  const out = structuredClone(spec);
  for (const path of SECRET_PATHS) {
    const holder = holderOf(out, path);
    const key = path[path.length - 1];
    if (typeof holder?.[key] !== 'string') continue;
    secrets[path.join('.')] = holder[key] as string;
    delete holder[key];
  }
  return { spec: out, secrets };
}

/** The spec with every secret it still holds replaced by `mask`. */
export function maskSecrets(spec: Record<string, unknown>, mask: string): Record<string, unknown> {
  if (!SECRET_PATHS.some((path) => holderOf(spec, path)?.[path[path.length - 1]] !== undefined)) return spec;
  const out = structuredClone(spec);
  for (const path of SECRET_PATHS) {
    const holder = holderOf(out, path);
    const key = path[path.length - 1];
    if (holder && holder[key] !== undefined) holder[key] = mask;
  }
  return out;
}
