import type { Job, JobEvent, JobState } from '@opentinker/client';
import { formatBytes, formatDuration, formatNumber } from './output';

/** What `jobs watch` knows about a job, folded from its events. */
export interface WatchSnapshot {
  state: JobState | 'unknown';
  step?: number;
  total?: number | null;
  message?: string | null;
  /** The latest value of each metric, in the order they first appeared. */
  metrics: Map<string, number>;
  /** The first and latest progress reports (server time), for the rate and the ETA. */
  first?: { step: number; time: number };
  last?: { step: number; time: number };
  artifacts: { name: string; size: number }[];
}

/** Metrics shown on the progress line; the summary shows them all. */
const LINE_METRICS = 4;
const BAR = 20;

/** The starting point: the job's state only, since the event stream replays its progress from the start. */
export function initialSnapshot(job?: Job): WatchSnapshot {
  return { state: job?.state ?? 'unknown', metrics: new Map(), artifacts: [] };
}

/** Folds one event into the snapshot (in place) and returns it. */
export function applyEvent(s: WatchSnapshot, e: JobEvent): WatchSnapshot {
  switch (e.type) {
    case 'state':
      s.state = e.data.state;
      break;
    case 'progress': {
      s.step = e.data.step;
      s.total = e.data.total;
      s.message = e.data.message;
      const point = { step: e.data.step, time: Date.parse(e.data.time) };
      // A step counter that went back (a resumed attempt) restarts the rate measurement.
      if (!s.first || point.step < (s.last?.step ?? 0)) s.first = point;
      s.last = point;
      break;
    }
    case 'metrics':
      for (const p of e.data.points) s.metrics.set(p.name, p.value);
      break;
    case 'artifact':
      s.artifacts = [...s.artifacts.filter((a) => a.name !== e.data.name), { name: e.data.name, size: e.data.size }];
      break;
    case 'end':
      if (e.data.state) s.state = e.data.state;
      break;
    default:
      break;
  }
  return s;
}

/** Time left at the rate measured so far, when there is a total and a rate. */
export function etaMs(s: WatchSnapshot): number | undefined {
  if (!s.first || !s.last || !s.total || s.step === undefined) return undefined;
  const steps = s.last.step - s.first.step;
  const ms = s.last.time - s.first.time;
  if (steps <= 0 || ms <= 0) return undefined;
  return Math.max(0, ((s.total - s.step) * ms) / steps);
}

/**
 * The one-line status a terminal redraws in place: state, a bar with step/total, the ETA and the
 * latest metrics, cut to the terminal's width.
 *
 * @example
 * ```ts
 * progressLine(snapshot, 80); // 'running  ███████░░░░░░░░░░░░░  37/100 37%  ETA 1m05s  reward 0.52 · loss 0.12'
 * ```
 *
 * `prefer` names the metrics to show first, when the job reports them (a train job reports dozens).
 */
export function progressLine(s: WatchSnapshot, width = 80, prefer: readonly string[] = []): string {
  const parts: string[] = [s.state];
  if (s.step !== undefined) {
    if (s.total) {
      const frac = Math.min(1, s.step / s.total);
      const filled = Math.round(frac * BAR);
      parts.push(`${'█'.repeat(filled)}${'░'.repeat(BAR - filled)}  ${s.step}/${s.total} ${Math.floor(frac * 100)}%`);
    } else {
      parts.push(`step ${s.step}`);
    }
  }
  // The ETA before the metrics: when the line is too wide, metrics are what gets cut.
  const eta = etaMs(s);
  if (eta !== undefined && s.state === 'running') parts.push(`ETA ${formatDuration(eta)}`);
  if (s.metrics.size) {
    const preferred = prefer.filter((k) => s.metrics.has(k)).map((k): [string, number] => [k, s.metrics.get(k)!]);
    const shown = preferred.length ? preferred : [...s.metrics];
    parts.push(
      shown
        .slice(0, LINE_METRICS)
        .map(([k, v]) => `${k} ${formatNumber(v)}`)
        .join(' · '),
    );
  }
  const line = parts.join('  ');
  return line.length > width - 1 ? `${line.slice(0, Math.max(0, width - 2))}…` : line;
}

/** The line `jobs watch` prints for an event when the output is not a terminal (logs aside). */
export function plainEventLine(e: JobEvent): string | undefined {
  switch (e.type) {
    case 'state': {
      const { state, time: _time, ...detail } = e.data;
      const extra = Object.entries(detail)
        .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
        .join(' ');
      return `state ${state}${extra ? ` ${extra}` : ''}`;
    }
    case 'progress':
      return `progress ${e.data.step}${e.data.total ? `/${e.data.total}` : ''}${e.data.message ? ` ${e.data.message}` : ''}`;
    case 'metrics': {
      const byStep = new Map<number, string[]>();
      for (const p of e.data.points) byStep.set(p.step, [...(byStep.get(p.step) ?? []), `${p.name}=${formatNumber(p.value)}`]);
      return [...byStep].map(([step, values]) => `metrics step ${step}: ${values.join(' ')}`).join('\n');
    }
    case 'artifact':
      return `artifact ${e.data.name} (${formatBytes(e.data.size)})`;
    case 'end':
      return undefined;
    case 'other':
      return `${e.event} ${JSON.stringify(e.data)}`;
    default:
      return undefined;
  }
}

/** Seconds between two progress lines without a terminal (a phase change prints at once). */
export const PLAIN_PROGRESS_SECONDS = 5;

/**
 * `jobs watch` without a terminal (a file, a pipe, a CI log): the job's states, artifacts and other
 * events as they come, and its progress at a bounded rate. A progress line (`progress 37/100 reward
 * 0.41 acc 0.35 | ETA 1m05s | reward 0.52 · loss 0.12`: the step, the job's message, the ETA and up to
 * four metrics) is printed at the first report, at each new phase (a state change, or a message of
 * another kind: `sft loss …` then `reward …`), at most once every {@link PLAIN_PROGRESS_SECONDS}
 * otherwise, and once more before the next state line when a report was held back. Metrics are not
 * printed per step: the summary and `opentinker jobs metrics` have them.
 *
 * @example
 * ```ts
 * const plain = new PlainProgress(['reward']);
 * for (const e of events) for (const line of plain.lines(applyEvent(snapshot, e), e)) console.log(line);
 * ```
 */
export class PlainProgress {
  private printedAt = Number.NEGATIVE_INFINITY;
  private phase: string | undefined;
  /** A progress or metrics report arrived since the last progress line. */
  private pending = false;

  constructor(
    private readonly prefer: readonly string[] = [],
    private readonly intervalMs = PLAIN_PROGRESS_SECONDS * 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The lines to print for an event already folded into `s`. */
  lines(s: WatchSnapshot, e: JobEvent): string[] {
    if (e.type === 'progress' || e.type === 'metrics') {
      if (s.step === undefined) return [];
      this.pending = true;
      const phase = e.type === 'progress' ? phaseOf(e.data.message) : this.phase;
      if (phase === this.phase && this.now() - this.printedAt < this.intervalMs) return [];
      this.phase = phase;
      return [this.progressLine(s)];
    }
    const line = plainEventLine(e);
    return [...this.flush(s), ...(line ? [line] : [])];
  }

  /** The held-back progress line, if any (before a state line, and when the watch ends). */
  flush(s: WatchSnapshot): string[] {
    return this.pending && s.step !== undefined ? [this.progressLine(s)] : [];
  }

  private progressLine(s: WatchSnapshot): string {
    this.pending = false;
    this.printedAt = this.now();
    const parts = [`progress ${s.step}${s.total ? `/${s.total}` : ''}${s.message ? ` ${s.message}` : ''}`];
    const eta = etaMs(s);
    if (eta !== undefined && s.state === 'running' && s.total && s.step! < s.total) parts.push(`ETA ${formatDuration(eta)}`);
    const preferred = this.prefer.filter((k) => s.metrics.has(k)).map((k): [string, number] => [k, s.metrics.get(k)!]);
    // Metrics the job's message already states are not repeated.
    const stated = new Set((s.message ?? '').split(/[\s,;=|]+/));
    const shown = (preferred.length ? preferred : [...s.metrics]).filter(([k]) => !stated.has(k)).slice(0, LINE_METRICS);
    if (shown.length) parts.push(shown.map(([k, v]) => `${k} ${formatNumber(v)}`).join(' · '));
    return parts.join(' | ');
  }
}

/** A progress message's kind, its numbers left out: `sft loss 0.412` and `sft loss 0.398` are one phase. */
function phaseOf(message: string | null | undefined): string {
  return (message ?? '').replace(/[-+]?\d[\d.,:e+-]*%?/gi, '#');
}

/**
 * What `jobs watch` prints when the job has ended.
 *
 * @example
 * ```ts
 * summaryLines(job, snapshot);
 * // ['Job 4f0c… succeeded in 5.1s (10/10 steps)', '  metrics    value 10', '  artifacts  result.json (120 B)']
 * ```
 */
export function summaryLines(job: Job, s: WatchSnapshot, prefer: readonly string[] = []): string[] {
  const took = job.started_at && job.finished_at ? ` in ${formatDuration(Date.parse(job.finished_at) - Date.parse(job.started_at))}` : '';
  const steps = s.step !== undefined ? ` (${s.step}${s.total ? `/${s.total}` : ''} steps)` : '';
  const lines = [`Job ${job.id}${job.name ? ` "${job.name}"` : ''} ${job.state}${took}${steps}`];
  // With preferred metrics, those (and a count of the rest) rather than a line of dozens.
  const preferred = prefer.filter((k) => s.metrics.has(k));
  if (preferred.length) {
    const rest = s.metrics.size - preferred.length;
    lines.push(
      `  metrics    ${preferred.map((k) => `${k} ${formatNumber(s.metrics.get(k)!)}`).join(' · ')}${rest ? ` (and ${rest} more: opentinker jobs metrics ${job.id})` : ''}`,
    );
  } else if (s.metrics.size) lines.push(`  metrics    ${[...s.metrics].map(([k, v]) => `${k} ${formatNumber(v)}`).join(' · ')}`);
  if (s.artifacts.length) lines.push(`  artifacts  ${s.artifacts.map((a) => `${a.name} (${formatBytes(a.size)})`).join(', ')}`);
  if (job.error) lines.push(`  error      ${job.error}`);
  return lines;
}
