import { readDatasetRows, DatasetCapError } from '../../datasets/dataset-rows';
import { CliError, EXIT } from './cli-error';

/** environment.tasks holds at most this many tasks per split (the spec's bound). */
export const MAX_GAME_TASKS = 10_000;

/**
 * The tasks of a seed data file (`data_path=…parquet|jsonl`) for an OpenTinker game server's `/reset`: a
 * job with `protocol: opentinker` cannot read an uploaded dataset (its environment lives on the game
 * server), so the command sends the rows as the split's tasks instead. Each row becomes what OpenTinker's
 * clients make of it (`StaticDatasetGenerator`, used by every data-file client of the seed: math, math
 * tool, geo3k, their inference): the row's `prompt`, which the job shows the model and never sends, and
 * the env kwargs `/reset` gets, `ground_truth` (the row's, else `reward_model.ground_truth`, else
 * `extra_info.ground_truth`), `extra_info` and `data_source` (the row's, else the interaction's name, the
 * environment id).
 */
export async function readSeedTasks(path: string, token: string, interaction: string): Promise<Record<string, unknown>[]> {
  const format = /\.parquet$/i.test(path) ? 'parquet' : 'jsonl';
  const tasks: Record<string, unknown>[] = [];
  try {
    for await (const row of readDatasetRows(path, format, { maxRows: MAX_GAME_TASKS, maxLineBytes: 16 * 1024 * 1024 })) {
      if (row.error) throw new CliError(`"${token}": ${path} ${row.error}`, EXIT.USAGE);
      tasks.push(seedTaskKwargs(row.value, `${path} row ${row.row}`, token, interaction));
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

/** One row's task (see {@link readSeedTasks}): `StaticDatasetGenerator.generate_sample`'s prompt and env kwargs. */
export function seedTaskKwargs(row: unknown, where: string, token: string, interaction: string): Record<string, unknown> {
  const r = asObject(row);
  if (!r) throw new CliError(`"${token}": ${where} is not a JSON object`, EXIT.USAGE);
  const task: Record<string, unknown> = {};
  if (r.prompt !== undefined && r.prompt !== null) task.prompt = r.prompt;
  const rewardModel = asObject(r.reward_model);
  const extra = asObject(r.extra_info);
  if ('ground_truth' in r) task.ground_truth = r.ground_truth;
  else if (rewardModel && 'ground_truth' in rewardModel) task.ground_truth = rewardModel.ground_truth;
  else if (extra && 'ground_truth' in extra) task.ground_truth = extra.ground_truth;
  if ('extra_info' in r) task.extra_info = r.extra_info;
  task.data_source = 'data_source' in r ? r.data_source : interaction;
  return task;
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
