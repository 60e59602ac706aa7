/**
 * What the job page shows for a job, decided by its kind's capabilities as the server reports them
 * (`GET /v1/job-kinds`), never by the kind's name: a kind added to the server gets the right sections
 * without a dashboard change. Pure functions besides the one request, so they are unit-tested in Node.
 */

/** The server's kinds, asked once per signed-in API client. */
const known = new WeakMap();

/**
 * The server's job kinds with their capabilities (`GET /v1/job-kinds`), asked once per API client; a
 * failed request is asked again next time.
 */
export function loadJobKinds(api, { signal } = {}) {
  let kinds = known.get(api);
  if (!kinds) {
    kinds = api.get('/v1/job-kinds', { signal });
    known.set(api, kinds);
    kinds.catch(() => known.delete(api));
  }
  return kinds;
}

/**
 * The job page's output sections for a job of `kind`: per-episode results when its kind writes a
 * results file (and the file's name, whose `artifact` event means new results), checkpoints when it
 * saves them or trains. A kind the server does not list gets neither.
 *
 * @example
 * jobOutputs([{ kind: 'inference', checkpoints: false, trains: false, results: 'results.jsonl' }], 'inference')
 * // { results: true, resultsFile: 'results.jsonl', checkpoints: false }
 */
export function jobOutputs(kinds, kind) {
  const k = kinds.find((x) => x.kind === kind);
  return { results: Boolean(k?.results), resultsFile: k?.results ?? null, checkpoints: Boolean(k && (k.checkpoints || k.trains)) };
}
