import type { JobListQuery, JobListSql } from './job-list.sql';
import { joinJobPage, serializeJobSummary } from './job-page.serializer';

/**
 * Jobs' JSON kept, at most: about 500 bytes each. Past it the cache starts over rather than tracking
 * recency: the rows of the pages being read come back on the next read.
 */
const MAX_KEPT = 20_000;

/**
 * Writes job-list pages on a list reader thread, keeping each job's JSON while its row is unchanged.
 *
 * Most listed jobs do not change between two reads (finished jobs never do), yet reading their 20
 * columns and writing their JSON was most of a page's cost. So a page is read as ids and `row_version`s
 * (a counter the database raises on every UPDATE of the row, whatever wrote it: migration
 * `JobRowVersion`), and only the jobs whose version is not the one kept are read in full and written.
 * Every page still comes from the database at the time of the request — ids, order, total and versions
 * — so a job's change is listed as soon as it is committed. A job read in full may be newer than the
 * version its page listed (it changed between the two statements); its newer JSON is used and kept.
 *
 * The bytes are those of `serializeJobPage` for the same rows (`job-page.serializer.spec.ts`).
 */
export class JobPageWriter {
  /** As UTF-8: a page is then a copy of its items' bytes (joining them as strings cost a sixth of the thread's time). */
  private readonly kept = new Map<string, { version: number; json: Buffer }>();

  constructor(
    private readonly sql: JobListSql,
    private readonly maxKept = MAX_KEPT,
  ) {}

  /** The page's JSON body as UTF-8 bytes. */
  async page(query: JobListQuery, page: number, limit: number): Promise<Buffer> {
    const { rows, total } = await this.sql.pageVersions(query);
    let stale = rows.filter(([id, version]) => this.kept.get(id)?.version !== version).map(([id]) => id);
    if (this.kept.size + stale.length > this.maxKept) {
      this.kept.clear();
      stale = rows.map(([id]) => id);
    }
    if (stale.length) for (const { summary, version } of await this.sql.summaries(stale)) this.kept.set(summary.id, { version, json: Buffer.from(serializeJobSummary(summary)) });
    const items = rows.map(([id]) => {
      const json = this.kept.get(id)?.json;
      // Jobs are never deleted; if one were, between the two reads, this page fails and is read again on the API thread.
      if (json === undefined) throw new Error(`job ${id} was listed but could not be read`);
      return json;
    });
    return joinJobPage(items, { page, limit, total });
  }

  /** Jobs whose JSON is kept now. */
  get size(): number {
    return this.kept.size;
  }
}
