/**
 * Pure helpers for inference results (one JSON line per episode): parsing the JSONL, summarising it,
 * and finding a game board in an episode's messages. No DOM, so they are unit-tested in Node.
 */

/** Episodes from JSONL text; a line that is not JSON (a truncated tail) is counted, not thrown on. */
export function parseResults(text) {
  const episodes = [];
  let bad = 0;
  for (const line of String(text).split('\n')) {
    if (!line.trim()) continue;
    try {
      const value = JSON.parse(line);
      if (value && typeof value === 'object') episodes.push(value);
      else bad++;
    } catch {
      bad++;
    }
  }
  return { episodes, bad };
}

/** Count, mean reward, and the rates the environment reported (math `correct`, gomoku `result`). */
export function summarise(episodes) {
  const n = episodes.length;
  const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
  const rewards = episodes.map((e) => e.reward).filter((r) => typeof r === 'number');
  const correct = episodes.map((e) => e.info?.correct).filter((c) => typeof c === 'boolean');
  const results = episodes.map((e) => e.result ?? e.info?.result).filter((r) => typeof r === 'string');
  const rate = (value) => (results.length ? results.filter((r) => r === value).length / results.length : null);
  return {
    episodes: n,
    rewardMean: mean(rewards),
    accuracy: correct.length ? correct.filter(Boolean).length / correct.length : null,
    winRate: rate('win'),
    lossRate: rate('loss'),
    drawRate: rate('draw'),
  };
}

/**
 * The last game board drawn in an episode's messages (gomoku draws it as text: a header of column
 * numbers, then one line per row, the opponent's last stone in brackets). Null when there is none.
 *
 * @example
 * findBoard([{ role: 'user', content: '   0  1\n0  .  X\n1 [O] .' }])
 * // { size: 2, cells: [['.', 'X'], ['O', '.']], highlight: [1, 0] }
 */
export function findBoard(messages) {
  for (let m = (messages?.length ?? 0) - 1; m >= 0; m--) {
    const board = parseBoard(String(messages[m]?.content ?? ''));
    if (board) return board;
  }
  return null;
}

export function parseBoard(text) {
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const header = lines[i].trim().split(/\s+/);
    if (header.length < 2 || !header.every((x, c) => Number(x) === c % 10 || Number(x) === c)) continue;
    const size = header.length;
    const cells = [];
    let highlight = null;
    for (let r = 0; r < size; r++) {
      const row = parseRow(lines[i + 1 + r] ?? '', r, size);
      if (!row) break;
      if (row.highlight !== null) highlight = [r, row.highlight];
      cells.push(row.cells);
    }
    if (cells.length === size) return { size, cells, highlight };
  }
  return null;
}

/** `3  .  X [O] .` → cells and the bracketed column. Each cell is three characters after the label. */
function parseRow(line, r, size) {
  const m = /^\s*(\d+) (.*)$/.exec(line);
  if (!m || Number(m[1]) !== r) return null;
  const body = m[2];
  const cells = [];
  let highlight = null;
  for (let c = 0; c < size; c++) {
    const chunk = body.slice(c * 3, c * 3 + 3).padEnd(3, ' ');
    const symbol = chunk[1];
    if (!['.', 'X', 'O'].includes(symbol)) return null;
    if (chunk[0] === '[') highlight = c;
    cells.push(symbol);
  }
  return { cells, highlight };
}
