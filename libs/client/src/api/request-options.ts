/** Options every client method takes. */
export interface RequestOptions {
  /** Aborts the request (and the waits between retries); the method rejects with the signal's reason. */
  signal?: AbortSignal;
}
