/**
 * Per-job game statistics with the fields and rules of OpenTinker's `BaseGameStats` /
 * `MultiJobGameStats` (`base_game_server.py`), so `GET /stats/step` of `opentinker env serve --protocol
 * opentinker` reads the same as an OpenTinker game server's: games register on `/reset`, every `/step`
 * adds its reward, a step with `done` completes the game; `/stats/reset` starts a new batch. Games whose
 * `info` names a `result` (gomoku's win, loss, draw…) add `GomokuGameStats`' `win_rate`, `loss_rate`,
 * `draw_rate` and `timeout_rate` (and cumulative rates), which OpenTinker's trainer logs as `game/win_rate`.
 */
export class GameStats {
  private step = 0;
  /** Per finished game of the batch. */
  private finalRewards: number[] = [];
  private sumRewards: number[] = [];
  private avgRewards: number[] = [];
  private gameSteps: number[] = [];
  private allStepRewards = 0;
  private readonly cumulative: Record<string, number> = {};
  /** Games of the batch not finished yet: instance id → reward so far and steps. */
  private readonly running = new Map<string, { sum: number; steps: number }>();
  private readonly started = new Set<string>();
  /**
   * Per finished game of the batch, how it ended, once a game reported `info.result` (games with a
   * winner): `GomokuGameStats`' win, loss, draw and timeout rates (any other ending counts as a timeout,
   * as upstream counts an unknown outcome).
   */
  private outcomes: Outcome[] | null = null;

  registerStart(instanceId: string): void {
    this.started.add(instanceId);
  }

  record(instanceId: string, reward: number, done: boolean, info: Record<string, unknown> = {}): void {
    this.started.add(instanceId);
    const game = this.running.get(instanceId) ?? { sum: 0, steps: 0 };
    game.sum += reward;
    game.steps += 1;
    this.running.set(instanceId, game);
    if (done) {
      this.finalRewards.push(reward);
      this.sumRewards.push(game.sum);
      this.avgRewards.push(game.steps > 0 ? game.sum / game.steps : 0);
      this.gameSteps.push(game.steps);
      this.cumulative.total_games = (this.cumulative.total_games ?? 0) + 1;
      this.running.delete(instanceId);
      if (typeof info.result === 'string') this.outcomes ??= [];
      if (this.outcomes) {
        const outcome = OUTCOME_OF[String(info.result)] ?? 'timeouts';
        this.outcomes.push(outcome);
        this.cumulative[`total_${outcome}`] = (this.cumulative[`total_${outcome}`] ?? 0) + 1;
      }
    }
    this.allStepRewards += 1;
  }

  /** `get_step_stats()`. */
  stepStats(): Record<string, number> {
    const mean = (xs: number[]) => (xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
    const total = this.started.size;
    const completed = this.finalRewards.length;
    const all = [...this.sumRewards, ...[...this.running.values()].map((g) => g.sum)];
    const meanFinal = mean(this.finalRewards);
    return {
      step: this.step,
      total_samples: total,
      games_in_step: completed,
      incomplete_samples: this.running.size,
      completion_rate: total > 0 ? completed / total : 0,
      ...(this.outcomes ? rates(this.outcomes, completed) : {}),
      mean_final_reward: meanFinal,
      mean_sum_reward: mean(this.sumRewards),
      mean_sum_reward_all: mean(all),
      mean_avg_reward: mean(this.avgRewards),
      mean_game_steps: mean(this.gameSteps),
      mean_reward: meanFinal,
      total_interactions: this.allStepRewards,
    };
  }

  cumulativeStats(): Record<string, number> {
    const games = this.cumulative.total_games ?? 0;
    if (!this.outcomes || games === 0) return { ...this.cumulative };
    const rate = (key: string) => (this.cumulative[key] ?? 0) / games;
    return { ...this.cumulative, cumulative_win_rate: rate('total_wins'), cumulative_loss_rate: rate('total_losses'), cumulative_draw_rate: rate('total_draws') };
  }

  /** `reset_step_stats()`: games left running count as incomplete in the cumulative stats. */
  resetStep(): Record<string, unknown> {
    const incomplete = this.running.size;
    if (incomplete > 0) this.cumulative.total_incomplete = (this.cumulative.total_incomplete ?? 0) + incomplete;
    this.finalRewards = [];
    this.sumRewards = [];
    this.avgRewards = [];
    this.gameSteps = [];
    this.allStepRewards = 0;
    this.running.clear();
    this.started.clear();
    if (this.outcomes) this.outcomes = [];
    this.step += 1;
    return { step: this.step, message: 'Step stats reset', incomplete_cleared: incomplete };
  }

  /** `reset_all()`. */
  resetAll(): Record<string, unknown> {
    this.resetStep();
    for (const key of Object.keys(this.cumulative)) delete this.cumulative[key];
    this.outcomes = null;
    this.step = 0;
    return { message: 'All stats reset' };
  }
}

type Outcome = 'wins' | 'losses' | 'draws' | 'timeouts';
const OUTCOME_OF: Record<string, Outcome> = { win: 'wins', loss: 'losses', draw: 'draws' };

/** `GomokuGameStats`' step rates: each ending's share of the batch's finished games (0 when none finished). */
function rates(outcomes: Outcome[], completed: number): Record<string, number> {
  const share = (o: Outcome) => (completed > 0 ? outcomes.filter((x) => x === o).length / completed : 0);
  return { win_rate: share('wins'), loss_rate: share('losses'), draw_rate: share('draws'), timeout_rate: share('timeouts') };
}

/** Most job ids kept; the oldest is dropped past this, so callers cannot grow the map without bound. */
const MAX_JOBS = 1024;

/** `MultiJobGameStats`: one {@link GameStats} per `job_id` (default `default`). */
export class MultiJobGameStats {
  private readonly jobs = new Map<string, GameStats>();

  job(jobId: string): GameStats {
    let stats = this.jobs.get(jobId);
    if (!stats) {
      stats = new GameStats();
      this.jobs.set(jobId, stats);
      if (this.jobs.size > MAX_JOBS) this.jobs.delete(this.jobs.keys().next().value!);
    }
    return stats;
  }

  list(): string[] {
    return [...this.jobs.keys()];
  }

  remove(jobId: string): boolean {
    return this.jobs.delete(jobId);
  }

  resetAllJobs(): Record<string, unknown> {
    const n = this.jobs.size;
    this.jobs.clear();
    return { message: `All stats reset for ${n} jobs`, jobs_cleared: n };
  }
}
