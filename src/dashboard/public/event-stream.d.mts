// Types for the TypeScript specs; the documentation lives in event-stream.mjs.
export interface StreamEvent {
  id: string | undefined;
  event: string;
  data: any;
}
export type StreamStatus = 'connecting' | 'live' | 'reconnecting' | 'ended';
export declare function followEventStream(
  url: string,
  options?: {
    headers?: Record<string, string>;
    onEvent?: (event: StreamEvent) => void;
    onStatus?: (status: StreamStatus) => void;
    signal?: AbortSignal;
    fetch?: typeof fetch;
    lastEventId?: string;
    retryMs?: number;
    maxRetryMs?: number;
  },
): Promise<{ ended: boolean; lastEventId: string | undefined }>;
