import type { OpenTinkerClient } from '@opentinker/client';
import { CliError, EXIT } from './cli-error';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PREFIX = /^[0-9a-f-]{4,35}$/i;
const PAGE = 100;
const MAX_PAGES = 10;

/**
 * A job id from a full id or a unique prefix of at least 4 characters (as `jobs list` shows them),
 * searched among the newest 1,000 jobs the caller can see.
 *
 * @example
 * ```ts
 * await resolveJobId(client, '4f0c'); // '4f0c8b1e-…'
 * ```
 */
export async function resolveJobId(client: OpenTinkerClient, ref: string): Promise<string> {
  if (UUID.test(ref)) return ref.toLowerCase();
  if (!PREFIX.test(ref)) {
    throw new CliError(`"${ref}" is not a job id (expected a UUID, or its first 4 or more characters)`, EXIT.USAGE, undefined, 'id');
  }
  const prefix = ref.toLowerCase();
  const matches = new Set<string>();
  for (let page = 1; page <= MAX_PAGES; page++) {
    const { items, total } = await client.jobs.list({ page, limit: PAGE });
    for (const job of items) if (job.id.startsWith(prefix)) matches.add(job.id);
    if (matches.size > 1 || page * PAGE >= total) break;
  }
  if (matches.size === 1) return [...matches][0];
  if (matches.size === 0) throw new CliError(`No job id starts with ${ref} (see \`opentinker jobs list\`)`, EXIT.FAILED, 'OT_ERR_NOT_FOUND', 'id');
  throw new CliError(`Several jobs start with ${ref}: ${[...matches].join(', ')}; give more characters`, EXIT.USAGE, undefined, 'id');
}
