import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The data folder holds every tenant's datasets and checkpoints, the database and job logs: only the
 * server's own user may read it. The folder is made (or put back to) mode 0700 and the process's umask
 * becomes 077, so everything written from now on — by this process and the job runners it spawns — is
 * 0600 files and 0700 folders. An older install's files keep their modes, but no other user can reach
 * them through the folder.
 */
export function secureDataFolder(home: string): void {
  process.umask(0o077);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  chmodSync(home, 0o700);
  for (const name of ['opentinker.db', 'opentinker.db-wal', 'opentinker.db-shm']) {
    const file = join(home, name);
    if (existsSync(file)) chmodSync(file, 0o600);
  }
}
