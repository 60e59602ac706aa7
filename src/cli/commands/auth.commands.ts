import { OpenTinkerClient } from '@opentinker/client';
import { Command } from 'commander';
import { CliError, EXIT, explain, maskKey } from './cli-error';
import { fail } from './command-kit';
import { credentialsPath, DEFAULT_URL, normaliseUrl, readCredentials, removeCredentials, writeCredentials } from './credentials';
import { printJson, printLine } from './output';
import { askSecret, interactive, readStdin } from './prompt';

/**
 * `login` and `logout`.
 *
 * @example
 * ```bash
 * opentinker login --url http://gpu-box:8780      # asks for the key
 * echo "$KEY" | opentinker login                  # or reads it from stdin
 * opentinker login --key otk_… --json
 * opentinker logout
 * ```
 */
export function registerAuthCommands(program: Command): void {
  program
    .command('login')
    .description('Check an API key against the server and save it (~/.opentinker/credentials, mode 0600)')
    .option('--url <url>', 'server URL (default: OPENTINKER_URL, the saved login, or http://127.0.0.1:8780)')
    .option('--key <key>', 'the API key (otk_…, or tml-otk_…); asked for on a terminal, else read from stdin')
    .option('--json', 'machine-readable output')
    .action(async (opts: { url?: string; key?: string; json?: boolean }) => {
      let url = opts.url ?? process.env.OPENTINKER_URL ?? DEFAULT_URL;
      try {
        url = normaliseUrl(opts.url ?? process.env.OPENTINKER_URL ?? readCredentials()?.url ?? DEFAULT_URL);
        const key = (opts.key ?? (await promptForKey(url)))?.trim();
        if (!key) throw new CliError('No API key given: pass --key, type it when asked, or pipe it in', EXIT.USAGE);
        if (!key.startsWith('otk_') && !key.startsWith('tml-otk_')) {
          throw new CliError(
            `"${maskKey(key)}" does not look like an OpenTinker API key (they start with otk_, or tml-otk_ in the Tinker SDK's form)`,
            EXIT.USAGE,
            undefined,
            '--key',
          );
        }
        let user;
        try {
          user = await new OpenTinkerClient({ baseUrl: url, apiKey: key }).users.me();
        } catch (error) {
          throw explain(error, { url, key });
        }
        const path = credentialsPath();
        writeCredentials({ url, key }, path);
        if (opts.json) {
          printJson({ url, user, credentials: path });
        } else {
          printLine(`Logged in to ${url} as ${user.name} (${user.role}). Saved in ${path}.`);
          if (process.env.OPENTINKER_API_KEY && process.env.OPENTINKER_API_KEY !== key) {
            printLine('Note: OPENTINKER_API_KEY is set, and takes precedence over the saved key.');
          }
        }
      } catch (error) {
        fail(explain(error, { url }), opts.json === true);
      }
    });

  program
    .command('logout')
    .description('Forget the saved API key (the key itself stays valid; revoke it with `keys revoke`)')
    .option('--json', 'machine-readable output')
    .action((opts: { json?: boolean }) => {
      const path = credentialsPath();
      const removed = removeCredentials(path);
      if (opts.json) printJson({ logged_out: removed, credentials: path });
      else printLine(removed ? `Logged out (removed ${path}).` : 'Not logged in: nothing to remove.');
    });
}

async function promptForKey(url: string): Promise<string | undefined> {
  if (interactive()) return askSecret(`API key for ${url}: `);
  if (process.stdin.isTTY) return undefined;
  return (await readStdin()).split(/\r?\n/)[0];
}
