// Types for the TypeScript specs; the documentation lives in api.mjs.
export declare class ApiError extends Error {
  constructor(status: number, code: string, message: string, field?: string);
  status: number;
  code: string;
  field?: string;
}
export declare function errorFromResponse(res: Response): Promise<ApiError>;
export interface DashboardApi {
  key: string;
  headers(extra?: Record<string, string>): Record<string, string>;
  get(path: string, opts?: { signal?: AbortSignal }): Promise<any>;
  post(path: string, body?: unknown, opts?: { signal?: AbortSignal }): Promise<any>;
  del(path: string, opts?: { signal?: AbortSignal }): Promise<any>;
  text(path: string, opts?: { signal?: AbortSignal }): Promise<string>;
  ndjson(path: string, opts?: { signal?: AbortSignal }): Promise<string>;
  blob(path: string, opts?: { signal?: AbortSignal }): Promise<Blob>;
}
export declare function createApi(options?: { key?: string; baseUrl?: string; fetch?: typeof fetch; onUnauthorized?: (error: ApiError) => void }): DashboardApi;
export declare function describeError(error: unknown): string;
