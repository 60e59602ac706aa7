/**
 * Per-job game statistics with the fields and rules of OpenTinker's `BaseGameStats` /
 * `MultiJobGameStats` (`base_game_server.py`), so `GET /stats/step` of `opentinker env serve --protocol
 * opentinker` reads the same as an OpenTinker game server's: games register on `/reset`, every `/step`
 * adds its reward, a step with `done` completes the game; `/stats/reset` starts a new batch.
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

  registerStart(instanceId: string): void {
    this.started.add(instanceId);
  }

  record(instanceId: string, reward: number, done: boolean): void {
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
    return { ...this.cumulative };
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
    this.step += 1;
    return { step: this.step, message: 'Step stats reset', incomplete_cleared: incomplete };
  }

  /** `reset_all()`. */
  resetAll(): Record<string, unknown> {
    this.resetStep();
    for (const key of Object.keys(this.cumulative)) delete this.cumulative[key];
    this.step = 0;
    return { message: 'All stats reset' };
  }
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
