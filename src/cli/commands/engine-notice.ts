import { engineNotice } from '@opentinker/engine/native';

/**
 * Says on stderr, in one line, when the engine's native addon is missing (what it costs, how to get it):
 * every command that trains or samples starts with it, so a slow machine is never a silent one.
 */
export function warnWithoutEngineAddon(): void {
  const notice = engineNotice();
  if (notice) process.stderr.write(`${notice}\n`);
}
