import { Command, CommanderError } from 'commander';
import { EXIT } from './cli-error';
import { registerAuthCommands } from './auth.commands';
import { registerChatCommands } from './chat.commands';
import { registerDataCommands } from './data.commands';
import { registerEnvsCommands } from './envs.commands';
import { registerJobsCommands } from './jobs.commands';
import { registerKeysCommands } from './keys.commands';
import { registerTrainCommands } from './train.commands';
import { registerUsersCommands } from './users.commands';

/**
 * The commands that talk to a running server through `@opentinker/client` (never the server's own
 * modules): `login`, `logout`, `users`, `keys`, `envs`, `jobs`, `train`, `infer`, `chat`, `data upload|list|preview|delete`. Each group lives in its own file.
 */
export function registerClientCommands(program: Command): void {
  const before = new Set(program.commands);
  registerAuthCommands(program);
  registerUsersCommands(program);
  registerKeysCommands(program);
  registerEnvsCommands(program);
  registerJobsCommands(program);
  registerTrainCommands(program);
  registerChatCommands(program);
  // `data` already exists (`data prepare` runs locally), so its new subcommands are marked one by one.
  for (const command of registerDataCommands(program)) exitWithUsageCode(command);
  for (const command of program.commands) if (!before.has(command)) exitWithUsageCode(command);
}

/**
 * Commander exits with 1 on a malformed command line (after naming the offending token); these
 * commands promise 2 for that, so scripts can tell a typo from a refused request.
 */
function exitWithUsageCode(command: Command): void {
  command.exitOverride((error: CommanderError) => {
    process.exit(error.exitCode === 0 ? EXIT.OK : EXIT.USAGE);
  });
  for (const sub of command.commands) exitWithUsageCode(sub);
}
