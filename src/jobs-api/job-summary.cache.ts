import type { JobSummary } from '../jobs/job.entity';
import { jobSummaryDto, writeJobSummary } from './jobs.dto';

/**
 * Each listed job's JSON (as `GET /v1/jobs` writes it), kept by job id and row version. A page is read as
 * ids and versions; only the jobs not kept at that version are read in full and written again. Every
 * UPDATE of a job row raises its version (`NEXT_VERSION`), in whatever process makes it, so a change shows
 * on the next page read after its commit. Finished jobs never change, so on a real server most listed
 * jobs are kept; reading and writing 50 summaries in full costs about four times reading 50 versions.
 */
export class JobSummaryCache {
  private readonly kept = new Map<string, { version: number; json: string }>();

  /** `max`: jobs kept (about 0.5 KB each); past it, the job kept longest ago is dropped. */
  constructor(private readonly max = 20_000) {}

  /** The JSON of each job of the page, in its order; `read` gives the summaries of the jobs not kept. */
  async items(page: { id: string; version: number }[], read: (ids: string[]) => Promise<JobSummary[]>): Promise<string[]> {
    const missing = page.filter((r) => this.kept.get(r.id)?.version !== r.version).map((r) => r.id);
    // A job read now may be newer than its listed version (changed in between): it is shown as read.
    for (const summary of missing.length ? await read(missing) : []) this.keep(summary);
    const items: string[] = [];
    for (const r of page) {
      const entry = this.kept.get(r.id);
      if (entry) items.push(entry.json);
    }
    return items;
  }

  private keep(summary: JobSummary): void {
    this.kept.delete(summary.id);
    if (this.kept.size >= this.max) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(summary.id, { version: summary.version, json: writeJobSummary(jobSummaryDto(summary)) });
  }
}
