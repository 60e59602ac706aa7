import type { OwnerUsage, QueueHead } from '../jobs/jobs.repository';

const NO_USAGE: OwnerUsage = { jobs: 0, gpus: 0, cpuSlots: 0 };

/**
 * The order in which users' next jobs are offered to a worker: fair share with equal shares, as Slurm's
 * fair-share factor and the YARN and Kubernetes fair queues do it, without usage history.
 *
 * - `heads` holds each user's first queued job in their own order (admin priority, priority, age).
 * - A user with `userLimit` starting or running jobs is left out (the per-user limit).
 * - An admin-set priority (`adminPriority`) counts first: higher goes first, across users.
 * - Then the user furthest below their share goes first. Every user has the same share, so that is the
 *   user whose starting and running jobs hold the fewest GPUs, then the fewest CPU slots (a GPU outweighs
 *   any number of CPU slots). Usage is what users hold now; no decayed history of past jobs is kept.
 * - Between users holding the same, the one whose last job started longest ago (or never) goes first, so
 *   users take turns even on a single device; then the older job (then the smaller id).
 */
export function fairOrder(heads: readonly QueueHead[], usage: ReadonlyMap<string, OwnerUsage>, userLimit: number): QueueHead[] {
  const of = (job: QueueHead) => usage.get(job.ownerId) ?? NO_USAGE;
  // Never started counts as the longest ago.
  const lastStart = (job: QueueHead) => job.ownerLastStartedAt ?? 0;
  return heads
    .filter((job) => of(job).jobs < userLimit)
    .sort(
      (a, b) =>
        b.adminPriority - a.adminPriority ||
        of(a).gpus - of(b).gpus ||
        of(a).cpuSlots - of(b).cpuSlots ||
        lastStart(a) - lastStart(b) ||
        a.createdAt - b.createdAt ||
        (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
}
