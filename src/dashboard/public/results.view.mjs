/**
 * Parts of the job page for what RL jobs produce: checkpoints (with downloads and the model path to
 * start from or chat with) and inference results with a per-episode viewer — a math trajectory as chat
 * turns, a gomoku game as a board.
 */
import { describeError } from './api.mjs';
import { cell, h, replace, showAlert } from './dom.mjs';
import { findBoard, parseResults, summarise } from './episodes.mjs';
import { bytes, dateTime } from './format.mjs';

/** Episodes listed in the table; the rest are summarised but not listed. */
const MAX_ROWS = 500;

const percent = (x) => (x === null ? '—' : `${(x * 100).toFixed(1)}%`);
const number = (x) => (x === null || x === undefined ? '—' : Number(x).toFixed(3));

/** Saves a blob the API returned (a plain link could not send the key). */
export function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** The checkpoints table of a train or session job; `load()` refreshes it. */
export function checkpointsSection({ api, jobId, error, signal }) {
  const body = h('div', {}, h('p', { class: 'muted' }, 'None yet.'));
  const section = h('section', { 'aria-labelledby': 'checkpoints-title' }, h('h2', { id: 'checkpoints-title' }, 'Checkpoints'), body);

  async function download(step) {
    showAlert(error, '');
    try {
      saveBlob(await api.blob(`/v1/jobs/${jobId}/checkpoints/${step}/download`), `job-${jobId}-step-${step}.tar`);
    } catch (e) {
      showAlert(error, `Could not download checkpoint ${step}: ${describeError(e)}`);
    }
  }

  async function load() {
    try {
      const list = await api.get(`/v1/jobs/${jobId}/checkpoints`, { signal });
      if (list.length === 0) return replace(body, h('p', { class: 'muted' }, 'None yet.'));
      replace(
        body,
        h(
          'table',
          { class: 'data' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['Step', 'Saved', 'Size', 'Kind', 'Model path', ''].map((c) => h('th', { scope: 'col' }, c)),
            ),
          ),
          h(
            'tbody',
            {},
            [...list]
              .reverse()
              .map((c) =>
                h(
                  'tr',
                  {},
                  cell('Step', String(c.step)),
                  cell('Saved', dateTime(c.created_at)),
                  cell('Size', bytes(c.size_bytes)),
                  cell('Kind', c.has_adapter ? 'LoRA adapter + merged model' : 'full model'),
                  cell('Model path', h('code', { class: 'mono' }, c.model_path)),
                  cell('', h('button', { type: 'button', class: 'link', onclick: () => download(c.step), 'aria-label': `Download checkpoint ${c.step}` }, 'Download')),
                ),
              ),
          ),
        ),
      );
    } catch (e) {
      if (e?.name !== 'AbortError') showAlert(error, `Could not list the checkpoints: ${describeError(e)}`);
    }
  }

  return { section, load };
}

/** The results of an inference job: a summary, a table of episodes and the viewer of the chosen one. */
export function resultsSection({ api, jobId, error, signal }) {
  const summary = h('p', { class: 'muted' }, 'No results yet.');
  const table = h('div', { class: 'results-table' });
  const viewer = h('div', { class: 'episode', 'aria-live': 'polite' });
  const section = h('section', { 'aria-labelledby': 'results-title' }, h('h2', { id: 'results-title' }, 'Results'), summary, table, viewer);

  async function load() {
    let text;
    try {
      text = await api.ndjson(`/v1/jobs/${jobId}/results`, { signal });
    } catch (e) {
      if (e?.name === 'AbortError') return;
      if (e?.status === 404) return; // none written yet
      return showAlert(error, `Could not load the results: ${describeError(e)}`);
    }
    const { episodes, bad } = parseResults(text);
    const s = summarise(episodes);
    const parts = [`${s.episodes} episodes`, `mean reward ${number(s.rewardMean)}`];
    if (s.accuracy !== null) parts.push(`accuracy ${percent(s.accuracy)}`);
    if (s.winRate !== null) parts.push(`wins ${percent(s.winRate)}, losses ${percent(s.lossRate)}, draws ${percent(s.drawRate)}`);
    if (bad) parts.push(`${bad} unreadable lines`);
    summary.textContent = parts.join(' · ');
    replace(
      table,
      h(
        'table',
        { class: 'data' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Task', 'Reward', 'Outcome', 'Response', ''].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        h(
          'tbody',
          {},
          episodes
            .slice(0, MAX_ROWS)
            .map((e, i) =>
              h(
                'tr',
                {},
                cell('Task', `${e.task_index ?? i}${e.sample ? ` #${e.sample}` : ''}`),
                cell('Reward', number(e.reward)),
                cell('Outcome', outcome(e)),
                cell('Response', h('span', { class: 'mono clip' }, String(e.response ?? '').slice(0, 80))),
                cell('', h('button', { type: 'button', class: 'link', onclick: () => show(e), 'aria-label': `View episode ${e.task_index ?? i}` }, 'View')),
              ),
            ),
        ),
      ),
      episodes.length > MAX_ROWS ? h('p', { class: 'muted' }, `Showing the first ${MAX_ROWS}.`) : null,
    );
  }

  function show(e) {
    const board = findBoard(e.messages);
    replace(
      viewer,
      h('h3', { tabindex: '-1' }, `Episode: task ${e.task_index ?? '?'}`),
      h('p', {}, `Reward ${number(e.reward)} · ${outcome(e)} · ended by ${e.finish ?? '?'}`, e.ground_truth !== undefined ? ` · expected ${JSON.stringify(e.ground_truth)}` : ''),
      board ? boardView(board) : null,
      h(
        'ol',
        { class: 'turns' },
        (e.messages ?? []).map((m) => h('li', { class: `turn turn-${m.role}` }, h('span', { class: 'turn-role' }, m.role), h('pre', { class: 'turn-text' }, m.content))),
      ),
    );
    viewer.querySelector('h3').focus();
  }

  return { section, load };
}

function outcome(e) {
  const result = e.result ?? e.info?.result;
  if (typeof result === 'string') return result;
  if (typeof e.info?.correct === 'boolean') return e.info.correct ? 'correct' : 'wrong';
  return e.finish ?? '—';
}

/** A board as a grid of cells; the opponent's last stone is marked. */
function boardView(board) {
  return h(
    'table',
    { class: 'board', 'aria-label': `Final board, ${board.size} by ${board.size}` },
    h(
      'tbody',
      {},
      board.cells.map((row, r) =>
        h(
          'tr',
          {},
          row.map((c, col) => {
            const last = board.highlight && board.highlight[0] === r && board.highlight[1] === col;
            const name = c === 'X' ? 'X' : c === 'O' ? 'O' : 'empty';
            return h('td', { class: `stone stone-${name}${last ? ' last' : ''}`, title: `${r},${col}: ${name}${last ? ' (last move)' : ''}` }, c === '.' ? '' : c);
          }),
        ),
      ),
    ),
  );
}
