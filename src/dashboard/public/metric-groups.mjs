/**
 * Which metrics share a chart. Training metrics come with many names for one quantity (verl writes
 * `critic/score/mean`, `actor/ppo_kl`, `response_length/mean`; other trainers `reward`, `kl`,
 * `val/accuracy`), so names are split into words and matched by word, in this order; a name no group
 * claims gets a chart of its own.
 */
export const METRIC_GROUPS = [
  { id: 'reward', title: 'Reward', words: ['reward', 'rewards', 'score', 'scores', 'return', 'returns'] },
  { id: 'accuracy', title: 'Accuracy / win rate', words: ['accuracy', 'acc', 'win', 'winrate', 'success', 'solved', 'correct', 'pass'] },
  { id: 'kl', title: 'KL divergence', words: ['kl'] },
  { id: 'entropy', title: 'Entropy', words: ['entropy', 'entropies'] },
  { id: 'length', title: 'Response length', words: ['length', 'len', 'lengths'] },
  { id: 'throughput', title: 'Throughput', words: ['throughput', 'tps'], match: (words) => perSecond(words) },
];

/** `tokens_per_second`, `samples_per_s`, `steps_per_sec`. */
function perSecond(words) {
  const i = words.indexOf('per');
  return i >= 0 && ['s', 'sec', 'second', 'seconds'].includes(words[i + 1]);
}

/** Lower-case words of a metric name: `actor/ppo_kl` → `['actor', 'ppo', 'kl']`. */
export function metricWords(name) {
  return String(name)
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** The group a metric name belongs to, or null when it gets its own chart. */
export function groupOf(name) {
  const words = metricWords(name);
  return METRIC_GROUPS.find((g) => words.some((w) => g.words.includes(w)) || g.match?.(words)) ?? null;
}

/**
 * Charts for a set of metric names: the known groups first (in {@link METRIC_GROUPS} order, only those
 * with a member), then one chart per remaining name, alphabetically. Names inside a chart are sorted.
 *
 * @example
 * groupMetrics(['actor/ppo_kl', 'critic/score/mean', 'step_fraction'])
 * // [{ id: 'reward', title: 'Reward', names: ['critic/score/mean'] },
 * //  { id: 'kl', title: 'KL divergence', names: ['actor/ppo_kl'] },
 * //  { id: 'metric:step_fraction', title: 'step_fraction', names: ['step_fraction'] }]
 */
export function groupMetrics(names) {
  const unique = [...new Set(names)].sort();
  const grouped = new Map(METRIC_GROUPS.map((g) => [g.id, []]));
  const alone = [];
  for (const name of unique) {
    const group = groupOf(name);
    if (group) grouped.get(group.id).push(name);
    else alone.push(name);
  }
  return [
    ...METRIC_GROUPS.filter((g) => grouped.get(g.id).length > 0).map((g) => ({ id: g.id, title: g.title, names: grouped.get(g.id) })),
    ...alone.map((name) => ({ id: `metric:${name}`, title: name, names: [name] })),
  ];
}
