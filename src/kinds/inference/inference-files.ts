/** Files an inference job writes in its work folder (shared by the runner and the API, which must not load the engine). */
export const RESULTS_FILE = 'results.jsonl';
export const SUMMARY_FILE = 'summary.json';
