// Types for the TypeScript specs; the documentation lives in metric-groups.mjs.
export interface MetricGroupRule {
  id: string;
  title: string;
  words: string[];
  match?: (words: string[]) => boolean;
}
export interface MetricChartGroup {
  id: string;
  title: string;
  names: string[];
}
export declare const METRIC_GROUPS: MetricGroupRule[];
export declare function metricWords(name: string): string[];
export declare function groupOf(name: string): MetricGroupRule | null;
export declare function groupMetrics(names: string[]): MetricChartGroup[];
