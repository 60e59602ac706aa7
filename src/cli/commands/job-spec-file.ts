import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { CliError, EXIT } from './cli-error';
import { readStdin } from './prompt';

/**
 * Reads a job spec from a `.json`, `.yaml`/`.yml` file, or stdin (`-`, JSON or YAML). The spec is
 * checked on the server (which names an unknown or wrong key by its path); here only that the file
 * reads and holds one object.
 *
 * @example
 * ```ts
 * await readJobSpec('job.yaml'); // { kind: 'sleep', steps: 5 }
 * ```
 */
export async function readJobSpec(source: string): Promise<Record<string, unknown>> {
  const label = source === '-' ? 'stdin' : source;
  let text: string;
  try {
    text = source === '-' ? await readStdin() : readFileSync(source, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CliError(code === 'ENOENT' ? `No such file: ${source}` : `Cannot read ${source}: ${(error as Error).message}`, EXIT.USAGE, undefined, '--config');
  }
  return parseJobSpec(text, label, source === '-' ? 'auto' : extname(source).toLowerCase() === '.json' ? 'json' : 'yaml');
}

/** Parses a job spec's text; errors name the source and where it went wrong. */
export function parseJobSpec(text: string, label: string, format: 'json' | 'yaml' | 'auto'): Record<string, unknown> {
  if (text.trim() === '') throw new CliError(`${label} is empty: expected a job spec such as {"kind": "sleep"}`, EXIT.USAGE, undefined, '--config');
  let value: unknown;
  try {
    // YAML is a superset of JSON, so stdin of either kind parses as YAML; a .json file gets JSON's stricter errors.
    value = format === 'json' ? JSON.parse(text) : parseYaml(text, { prettyErrors: true });
  } catch (error) {
    throw new CliError(
      `${label} is not valid ${format === 'json' ? 'JSON' : 'YAML or JSON'}: ${(error as Error).message.split('\n')[0].replace(/:$/, '')}`,
      EXIT.USAGE,
      undefined,
      '--config',
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CliError(
      `${label} must hold one job spec (an object with "kind"), not ${Array.isArray(value) ? 'a list' : JSON.stringify(value)}`,
      EXIT.USAGE,
      undefined,
      '--config',
    );
  }
  return value as Record<string, unknown>;
}
