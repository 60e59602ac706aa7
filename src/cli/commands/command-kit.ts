import { OpenTinkerClient } from '@opentinker/client';
import { Command } from 'commander';
import { CliError, EXIT, explain } from './cli-error';
import { Connection, readCredentials, resolveConnection } from './credentials';

/** The options every client command takes. */
export interface CommonOptions {
  url?: string;
  json?: boolean;
}

/** What a client command's handler gets. */
export interface CommandContext<O> {
  client: OpenTinkerClient;
  connection: Connection;
  options: O & CommonOptions;
  json: boolean;
}

/** Adds `--url` and `--json` to a command. */
export function withCommonOptions(command: Command): Command {
  return command.option('--url <url>', 'server URL (default: OPENTINKER_URL, the saved login, or http://127.0.0.1:8780)').option('--json', 'machine-readable output');
}

/**
 * Wraps a command handler: resolves the server and key, builds the client, and turns any failure
 * into a clear message (JSON on stderr with `--json`) and an exit code from {@link EXIT}. The handler
 * may return an exit code.
 */
export function clientAction<O, A extends unknown[]>(
  handler: (ctx: CommandContext<O>, ...args: A) => Promise<number | void>,
  opts: { needsKey?: boolean } = {},
): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    const command = args[args.length - 1] as Command;
    const options = command.opts() as O & CommonOptions;
    const positional = args.slice(0, -2) as A;
    let connection: Connection = { url: options.url ?? process.env.OPENTINKER_URL ?? '' };
    try {
      connection = resolveConnection(options.url, process.env, readCredentials());
      if (opts.needsKey !== false && !connection.key) {
        const saved = readCredentials();
        throw new CliError(
          saved
            ? `Not logged in to ${connection.url} (the saved login is for ${saved.url}). Run \`opentinker login --url ${connection.url}\`, or set OPENTINKER_API_KEY.`
            : 'Not logged in. Run `opentinker login` (or set OPENTINKER_API_KEY and OPENTINKER_URL).',
          EXIT.AUTH,
        );
      }
      const client = new OpenTinkerClient({ baseUrl: connection.url, apiKey: connection.key });
      const code = await handler({ client, connection, options, json: options.json === true }, ...positional);
      process.exitCode = code ?? EXIT.OK;
    } catch (error) {
      fail(explain(error, connection), options.json === true);
    }
  };
}

/** Reports a failure on stderr and sets the exit code. */
export function fail(error: CliError, json: boolean): void {
  if (json) {
    process.stderr.write(JSON.stringify({ error: { code: error.code ?? null, message: error.message, field: error.field ?? null, exit_code: error.exitCode } }) + '\n');
  } else {
    process.stderr.write(`opentinker: ${error.message}\n`);
  }
  process.exitCode = error.exitCode;
}

/**
 * A whole number within bounds from an option, or a usage error naming the option and the token.
 *
 * @example
 * ```ts
 * intOption('--limit', '20', 1, 100); // 20
 * intOption('--limit', 'lots', 1, 100); // throws: --limit must be a whole number from 1 to 100, got "lots"
 * ```
 */
export function intOption(flag: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^-?\d+$/.test(value.trim()) || n < min || n > max) {
    throw new CliError(`${flag} must be a whole number from ${min} to ${max}, got "${value}"`, EXIT.USAGE, undefined, flag);
  }
  return n;
}
