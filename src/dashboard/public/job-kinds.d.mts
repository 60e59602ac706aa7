// Types for the TypeScript specs; the documentation lives in job-kinds.mjs.
import type { DashboardApi } from './api.mjs';

export interface JobKindInfo {
  kind: string;
  description: string;
  resumable: boolean;
  checkpoints: boolean;
  trains: boolean;
  calls: boolean;
  results: string | null;
}
export declare function loadJobKinds(api: DashboardApi, options?: { signal?: AbortSignal }): Promise<JobKindInfo[]>;
export declare function jobOutputs(kinds: JobKindInfo[], kind: string): { results: boolean; resultsFile: string | null; checkpoints: boolean };
