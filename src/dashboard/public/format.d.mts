// Types for the TypeScript specs; the documentation lives in format.mjs.
export declare function age(iso: string | null | undefined, now?: number): string;
export declare function duration(from: string | null | undefined, to: string | null | undefined, now?: number): string;
export declare function bytes(n: number): string;
export declare function shortId(id: string): string;
export declare function metricValue(value: number): string;
export declare function dateTime(iso: string | null | undefined): string;
export declare const FINAL_STATES: string[];
export declare function cancellable(job: { state: string; cancel_requested: boolean }): boolean;
