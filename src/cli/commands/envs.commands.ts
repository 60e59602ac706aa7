import type { EnvironmentDetail, OpenTinkerClient } from '@opentinker/client';
import { isOpenTinkerError } from '@opentinker/client';
import { Command } from 'commander';
import { CliError, EXIT } from './cli-error';
import { clientAction, withCommonOptions } from './command-kit';
import { printJson, printLine, table } from './output';

/**
 * `envs list|show <id>`: the environments the server loaded.
 *
 * @example
 * ```bash
 * opentinker envs list
 * opentinker envs show math          # config schema, defaults, task counts
 * ```
 */
export function registerEnvsCommands(program: Command): void {
  const envs = program.command('envs').description('Environments the server offers');

  withCommonOptions(envs.command('list').description('Loaded environments, and third-party packages that failed to load')).action(
    clientAction(async ({ client, json }) => {
      const list = await client.environments.list();
      if (json) return printJson(list);
      printLine(
        table(list, [
          ['ID', (e) => e.id ?? '?'],
          ['VERSION', (e) => e.version],
          ['STATUS', (e) => e.status],
          ['TURNS', (e) => e.turn_mode],
          ['TASKS', (e) => e.task_source],
          ['PACKAGE', (e) => e.package],
          ['DESCRIPTION', (e) => (e.status === 'failed' ? `failed: ${e.error}` : e.description)],
        ]),
      );
    }),
  );

  withCommonOptions(envs.command('show').description('One environment: config schema, defaults, task counts').argument('<id>', 'environment id')).action(
    clientAction<object, [string]>(async ({ client, json }, id) => {
      const env = await getEnvironment(client, id);
      if (json) return printJson(env);
      for (const line of describe(env)) printLine(line);
    }),
  );
}

/** An environment, or an error that lists the known ones (the usual mistake is a typo). */
export async function getEnvironment(client: OpenTinkerClient, id: string): Promise<EnvironmentDetail> {
  try {
    return await client.environments.get(id);
  } catch (error) {
    if (isOpenTinkerError(error) && error.code === 'OT_ERR_NOT_FOUND') {
      throw new CliError(`Unknown environment ${id} (known: ${await knownEnvironments(client)})`, EXIT.FAILED, error.code, 'id');
    }
    throw error;
  }
}

/** The loaded environment ids, comma-separated, for messages. */
export async function knownEnvironments(client: OpenTinkerClient): Promise<string> {
  const ids = (await client.environments.list()).filter((e) => e.status === 'loaded' && e.id).map((e) => e.id as string);
  return ids.length ? ids.sort().join(', ') : 'none loaded';
}

function describe(env: EnvironmentDetail): string[] {
  const lines = [`${env.id}  ${env.package ?? ''}@${env.version ?? '?'}  (${env.status}${env.first_party ? ', first-party' : ''}, from ${env.source})`];
  if (env.description) lines.push(env.description);
  if (env.status === 'failed') lines.push(`Failed to load: ${env.error}`);
  lines.push(`Turns: ${env.turn_mode ?? '?'}; tasks: ${env.task_source ?? '?'}`);
  if (env.tasks) lines.push(`Task counts (default config): train ${env.tasks.train ?? 'endless'}, test ${env.tasks.test ?? 'endless'}`);
  if (env.tasks_error) lines.push(`Task counts unavailable: ${env.tasks_error}`);
  const props = (env.config_schema as { properties?: Record<string, { type?: unknown; description?: string; default?: unknown; enum?: unknown[] }> }).properties;
  if (props && Object.keys(props).length) {
    lines.push('', 'Config:');
    lines.push(
      table(Object.entries(props), [
        ['KEY', ([k]) => k],
        ['TYPE', ([, p]) => (p.enum ? p.enum.join('|') : Array.isArray(p.type) ? p.type.join('|') : (p.type as string | undefined))],
        ['DEFAULT', ([k, p]) => JSON.stringify((env.default_config as Record<string, unknown> | null)?.[k] ?? p.default)],
        ['DESCRIPTION', ([, p]) => p.description],
      ])
        .split('\n')
        .map((l) => `  ${l}`)
        .join('\n'),
    );
  }
  return lines;
}
