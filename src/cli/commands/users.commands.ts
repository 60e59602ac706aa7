import { Command } from 'commander';
import { CliError, EXIT } from './cli-error';
import { clientAction, withCommonOptions } from './command-kit';
import { printIssuedKey } from './keys.commands';
import { tinkerForm } from '../../auth/api-key';
import { formatAge, printJson, printLine, table } from './output';

/**
 * `users create|list|me`.
 *
 * @example
 * ```bash
 * opentinker users create alice            # prints alice's first API key, once
 * opentinker users create ops --role admin
 * opentinker users list --json
 * opentinker users me
 * ```
 */
export function registerUsersCommands(program: Command): void {
  const users = program.command('users').description('Users (create and list need an admin key)');

  withCommonOptions(users.command('create').description('Create a user and its first API key').argument('<name>', 'letters, digits, dot, dash, underscore'))
    .option('--role <role>', 'user or admin', 'user')
    .action(
      clientAction<{ role: string }, [string]>(async ({ client, json, options }, name) => {
        if (options.role !== 'user' && options.role !== 'admin') {
          throw new CliError(`--role must be user or admin, got "${options.role}"`, EXIT.USAGE, undefined, '--role');
        }
        const created = await client.users.create({ name, role: options.role });
        if (json) return printJson({ ...created, api_key: { ...created.api_key, tinker_key: tinkerForm(created.api_key.key) } });
        printLine(`Created ${created.user.role} ${created.user.name} (${created.user.id}).`);
        printIssuedKey('API key', created.api_key.key);
      }),
    );

  withCommonOptions(users.command('list').description('Every user (admin)')).action(
    clientAction(async ({ client, json }) => {
      const list = await client.users.list();
      if (json) return printJson(list);
      printLine(
        table(list, [
          ['NAME', (u) => u.name],
          ['ROLE', (u) => u.role],
          ['ID', (u) => u.id],
          ['CREATED', (u) => formatAge(u.created_at)],
        ]),
      );
    }),
  );

  withCommonOptions(users.command('me').description('Who the API key belongs to')).action(
    clientAction(async ({ client, json, connection }) => {
      const me = await client.users.me();
      if (json) return printJson(me);
      printLine(`${me.name} (${me.role}, id ${me.id}) on ${connection.url}; key from ${connection.keySource === 'credentials' ? 'the saved login' : connection.keySource}`);
    }),
  );
}
