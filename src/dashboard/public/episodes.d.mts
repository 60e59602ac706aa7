export interface Episode {
  task_index?: number;
  sample?: number;
  reward?: number;
  finish?: string;
  response?: string;
  result?: string | null;
  ground_truth?: unknown;
  messages?: { role: string; content: string }[];
  info?: Record<string, unknown>;
  [key: string]: unknown;
}
export function parseResults(text: string): { episodes: Episode[]; bad: number };
export function summarise(episodes: Episode[]): {
  episodes: number;
  rewardMean: number | null;
  accuracy: number | null;
  winRate: number | null;
  lossRate: number | null;
  drawRate: number | null;
};
export interface Board {
  size: number;
  cells: string[][];
  highlight: [number, number] | null;
}
export function findBoard(messages: Episode['messages']): Board | null;
export function parseBoard(text: string): Board | null;
