import { readDatasetRows, DatasetCapError } from '../../datasets/dataset-rows';
import { CliError, EXIT } from './cli-error';

/** environment.tasks holds at most this many tasks per split (the spec's bound). */
export const MAX_GAME_TASKS = 10_000;

/**
 * The env kwargs of each row of a seed data file (`data_path=…parquet|jsonl`), for an OpenTinker game
 * server's `/reset`: a job with `protocol: opentinker` cannot read an uploaded dataset (its environment
 * lives on the game server), so the command sends the rows as the split's tasks instead. Per row, as
 * OpenTinker's agent loop takes them: `extra_info.interaction_kwargs` (or a top-level
 * `interaction_kwargs`), its `env_kwargs` when it has them, else its other keys (`name` names the
 * interaction, not the task); a row without interaction kwargs is the kwargs itself. Outside `env_kwargs`
 * the task also carries the row's `prompt` and ground truth, as OpenTinker's inference sends them
 * (`StaticDatasetGenerator`: `ground_truth`, else `reward_model.ground_truth`, else
 * `extra_info.ground_truth`): the seed's model sees the row's prompt, and here the game server builds the
 * prompt from its task (`opentinker env serve math` takes `prompt` + `ground_truth`).
 */
export async function readSeedTasks(path: string, token: string): Promise<Record<string, unknown>[]> {
  const format = /\.parquet$/i.test(path) ? 'parquet' : 'jsonl';
  const tasks: Record<string, unknown>[] = [];
  try {
    for await (const row of readDatasetRows(path, format, { maxRows: MAX_GAME_TASKS, maxLineBytes: 16 * 1024 * 1024 })) {
      if (row.error) throw new CliError(`"${token}": ${path} ${row.error}`, EXIT.USAGE);
      tasks.push(seedTaskKwargs(row.value, `${path} row ${row.row}`, token));
    }
  } catch (error) {
    if (error instanceof CliError) throw error;
    const why =
      error instanceof DatasetCapError
        ? `${path} has more than ${MAX_GAME_TASKS} rows (an OpenTinker game server's split holds at most ${MAX_GAME_TASKS} tasks)`
        : `cannot read ${path}: ${(error as Error).message}`;
    throw new CliError(`"${token}": ${why}`, EXIT.USAGE);
  }
  if (tasks.length === 0) throw new CliError(`"${token}": ${path} has no rows`, EXIT.USAGE);
  return tasks;
}

/** One row's env kwargs (see {@link readSeedTasks}). */
export function seedTaskKwargs(row: unknown, where: string, token: string): Record<string, unknown> {
  const r = asObject(row);
  if (!r) throw new CliError(`"${token}": ${where} is not a JSON object`, EXIT.USAGE);
  const extra = asObject(r.extra_info);
  const kwargs = asObject(extra?.interaction_kwargs ?? r.interaction_kwargs);
  const envKwargs = asObject(kwargs?.env_kwargs);
  if (envKwargs) return envKwargs;
  const task = { ...(kwargs ?? r) };
  if (kwargs) delete task.name;
  if (task.prompt === undefined && r.prompt !== undefined) task.prompt = r.prompt;
  const truth = r.ground_truth ?? asObject(r.reward_model)?.ground_truth ?? extra?.ground_truth;
  if (task.ground_truth === undefined && truth !== undefined) task.ground_truth = truth;
  return task;
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
