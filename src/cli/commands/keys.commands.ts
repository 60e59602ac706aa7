import type { ApiKey, OpenTinkerClient } from '@opentinker/client';
import { Command } from 'commander';
import { tinkerForm } from '../../auth/api-key';
import { CliError, EXIT } from './cli-error';
import { clientAction, withCommonOptions } from './command-kit';
import { formatAge, printJson, printLine, table } from './output';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `keys create|list|revoke` (the caller's own keys).
 *
 * @example
 * ```bash
 * opentinker keys create laptop         # the key, and its Tinker SDK form tml-otk_…
 * opentinker keys list
 * opentinker keys revoke laptop          # by name or id
 * ```
 */
export function registerKeysCommands(program: Command): void {
  const keys = program.command('keys').description('Your API keys');

  withCommonOptions(keys.command('create').description('Issue a new API key').argument('<name>', 'a label to tell keys apart')).action(
    clientAction<object, [string]>(async ({ client, json }, name) => {
      const issued = await client.keys.create({ name });
      if (json) return printJson({ ...issued, tinker_key: tinkerForm(issued.key) });
      printLine(`Created key ${issued.name} (${issued.id}).`);
      printIssuedKey('Key', issued.key);
    }),
  );

  withCommonOptions(keys.command('list').description('Your keys (secrets are never shown again)')).action(
    clientAction(async ({ client, json }) => {
      const list = await client.keys.list();
      if (json) return printJson(list);
      printLine(
        table(list, [
          ['ID', (k) => k.id],
          ['NAME', (k) => k.name],
          ['PREFIX', (k) => `${k.prefix}…`],
          ['CREATED', (k) => formatAge(k.created_at)],
          ['LAST USED', (k) => formatAge(k.last_used_at)],
          ['REVOKED', (k) => (k.revoked_at ? formatAge(k.revoked_at) : '')],
        ]),
      );
    }),
  );

  withCommonOptions(keys.command('revoke').description('Revoke a key: requests with it fail from now on').argument('<key>', "the key's id or name")).action(
    clientAction<object, [string]>(async ({ client, json }, ref) => {
      const revoked = await client.keys.revoke(await keyId(client, ref));
      if (json) return printJson(revoked);
      printLine(`Revoked key ${revoked.name} (${revoked.id}).`);
    }),
  );
}

/** A new key, shown once, with the same key in the form the Tinker SDK takes (it refuses keys not starting with `tml-`). */
export function printIssuedKey(what: string, key: string): void {
  printLine(`${what} (shown only this once; store it now):\n\n  ${key}\n`);
  printLine(`The same key for the Tinker SDK (api_key=, TINKER_API_KEY):\n\n  ${tinkerForm(key)}\n`);
}

/** A key's id from its id or its (unique, unrevoked) name. */
async function keyId(client: OpenTinkerClient, ref: string): Promise<string> {
  if (UUID.test(ref)) return ref;
  const matches = (await client.keys.list()).filter((k: ApiKey) => k.name === ref && !k.revoked_at);
  if (matches.length === 1) return matches[0].id;
  if (matches.length === 0) throw new CliError(`No active key is named "${ref}" (see \`opentinker keys list\`)`, EXIT.FAILED);
  throw new CliError(`${matches.length} active keys are named "${ref}": give the id (${matches.map((k) => k.id).join(', ')})`, EXIT.USAGE);
}
