/**
 * The jobs list: state, name, kind, environment, owner (admins), progress, age; a state filter (sent to
 * the API), a search by name or id (over the page shown, plus a direct look-up for a full id), and
 * cancel. Refreshed every 2 s; rows are updated in place so keyboard focus survives a refresh.
 */
import { describeError } from './api.mjs';
import { alertBox, cell, h, replace, showAlert } from './dom.mjs';
import { age, cancellable, dateTime, shortId } from './format.mjs';

const REFRESH_MS = 2000;
const PAGE_SIZE = 50;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const STATE_FILTERS = [
  { value: '', label: 'All states' },
  { value: 'queued,starting,running', label: 'Active (queued, starting, running)' },
  { value: 'queued', label: 'Queued' },
  { value: 'starting', label: 'Starting' },
  { value: 'running', label: 'Running' },
  { value: 'succeeded', label: 'Succeeded' },
  { value: 'failed', label: 'Failed' },
  { value: 'cancelled', label: 'Cancelled' },
];

/** Kept across visits, so coming back from a job page keeps the filter. */
const filters = { state: '', search: '', page: 1 };

/** A job's label on screen: its name, else the start of its id. */
export function jobLabel(job) {
  return job.name || `job ${shortId(job.id)}`;
}

/** Cancels a job after asking; resolves to the updated job, or null when the user said no. */
export async function confirmCancel(api, job) {
  if (!window.confirm(`Cancel ${jobLabel(job)}? A running job is stopped; this cannot be undone.`)) return null;
  return api.post(`/v1/jobs/${job.id}/cancel`);
}

export function stateBadge(job) {
  const text = job.cancel_requested && !['succeeded', 'failed', 'cancelled'].includes(job.state) ? `${job.state} (cancelling)` : job.state;
  return h('span', { class: `badge state state-${job.state}`, dataset: { state: job.state } }, text);
}

export function progressView(job, label) {
  const p = job.progress;
  if (!p) return h('span', { class: 'muted' }, '—');
  const text = p.total ? `${p.step}/${p.total}` : `step ${p.step}`;
  return h(
    'span',
    { class: 'progress' },
    p.total ? h('progress', { max: String(p.total), value: String(p.step), 'aria-label': `Progress of ${label}` }) : null,
    h('span', { class: 'progress-text' }, text),
  );
}

export function mountJobs(ctx, main) {
  const { api, isAdmin } = ctx;
  ctx.setTitle('Jobs');
  let stopped = false;
  let timer = 0;
  let last = { items: [], total: 0 };
  let extra = null; // a job found by full id that is not on the page
  const owners = new Map();
  const rows = new Map();

  const stateSelect = h(
    'select',
    { id: 'job-state', name: 'state' },
    STATE_FILTERS.map((f) => h('option', { value: f.value, selected: f.value === filters.state }, f.label)),
  );
  const search = h('input', { id: 'job-search', name: 'search', type: 'search', placeholder: 'name or id', value: filters.search, autocomplete: 'off' });
  const summary = h('p', { class: 'summary', role: 'status' });
  const error = alertBox();
  const columns = ['State', 'Name', 'Kind', 'Environment', ...(isAdmin ? ['Owner'] : []), 'Progress', 'Age', 'Actions'];
  const tbody = h('tbody');
  const table = h(
    'table',
    { class: 'data jobs-table' },
    h('caption', { class: 'visually-hidden' }, 'Jobs, newest first'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        columns.map((c) => h('th', { scope: 'col', class: c === 'Actions' ? 'actions' : null }, c === 'Actions' ? h('span', { class: 'visually-hidden' }, c) : c)),
      ),
    ),
    tbody,
  );
  const newer = h('button', { type: 'button', onclick: () => page(-1) }, 'Newer');
  const older = h('button', { type: 'button', onclick: () => page(1) }, 'Older');
  const empty = h('p', { class: 'empty', hidden: true });

  replace(
    main,
    h('h1', { tabindex: '-1' }, 'Jobs'),
    h(
      'form',
      { class: 'toolbar', role: 'search', onsubmit: (e) => e.preventDefault() },
      h('div', { class: 'field' }, h('label', { for: 'job-state' }, 'State'), stateSelect),
      h('div', { class: 'field grow' }, h('label', { for: 'job-search' }, 'Search by name or id'), search),
    ),
    error,
    summary,
    h('div', { class: 'table-wrap' }, table),
    empty,
    h('nav', { class: 'pager', 'aria-label': 'Pages' }, newer, older),
  );

  stateSelect.addEventListener('change', () => {
    filters.state = stateSelect.value;
    filters.page = 1;
    refresh();
  });
  search.addEventListener('input', () => {
    filters.search = search.value;
    render();
    if (UUID.test(search.value.trim())) lookUp(search.value.trim());
  });

  function page(delta) {
    filters.page = Math.max(1, filters.page + delta);
    refresh();
  }

  async function lookUp(id) {
    if (last.items.some((j) => j.id === id)) return;
    try {
      extra = await api.get(`/v1/jobs/${id}`);
    } catch {
      extra = null;
    }
    render();
  }

  async function loadOwners() {
    if (!isAdmin) return;
    try {
      for (const user of await api.get('/v1/users')) owners.set(user.id, user.name);
      render();
    } catch {
      // owners then show as ids
    }
  }

  async function refresh() {
    clearTimeout(timer);
    const params = new URLSearchParams({ page: String(filters.page), limit: String(PAGE_SIZE) });
    if (filters.state) params.set('state', filters.state);
    try {
      last = await api.get(`/v1/jobs?${params}`);
      if (stopped) return;
      if (isAdmin && last.items.some((j) => !owners.has(j.owner_id))) loadOwners();
      showAlert(error, '');
      render();
    } catch (e) {
      if (stopped) return;
      showAlert(error, `Could not load jobs: ${describeError(e)}`);
    }
    if (!stopped) timer = setTimeout(refresh, REFRESH_MS);
  }

  function visibleJobs() {
    const q = filters.search.trim().toLowerCase();
    const jobs = extra && !last.items.some((j) => j.id === extra.id) ? [extra, ...last.items] : last.items;
    if (!q) return last.items;
    return jobs.filter((j) => j.id.toLowerCase().includes(q) || (j.name ?? '').toLowerCase().includes(q));
  }

  function render() {
    const jobs = visibleJobs();
    const seen = new Set();
    jobs.forEach((job, i) => {
      seen.add(job.id);
      let row = rows.get(job.id);
      if (!row) {
        row = makeRow(job);
        rows.set(job.id, row);
      }
      updateRow(row, job);
      // Insert or move only when out of place: moving a row would blur a focused button in it.
      if (tbody.children[i] !== row.tr) tbody.insertBefore(row.tr, tbody.children[i] ?? null);
    });
    for (const [id, row] of rows) {
      if (!seen.has(id)) {
        row.tr.remove();
        rows.delete(id);
      }
    }
    const from = (filters.page - 1) * PAGE_SIZE;
    if (filters.search.trim()) summary.textContent = `${jobs.length} matching job${jobs.length === 1 ? '' : 's'} on this page.`;
    else if (last.total === 0) summary.textContent = '';
    else summary.textContent = `Jobs ${from + 1}–${from + last.items.length} of ${last.total}, newest first.`;
    table.hidden = jobs.length === 0;
    empty.hidden = jobs.length > 0;
    replace(
      empty,
      last.total === 0 && !filters.state
        ? ['No jobs yet. Submit one with ', h('code', {}, 'npx opentinker train …'), ' or ', h('code', {}, 'POST /v1/jobs'), '.']
        : 'No jobs match.',
    );
    newer.disabled = filters.page <= 1;
    older.disabled = from + last.items.length >= last.total;
  }

  function makeRow(job) {
    const row = { tr: h('tr', { dataset: { jobId: job.id } }), cells: {} };
    for (const c of columns) {
      row.cells[c] = cell(c);
      if (c === 'Actions') row.cells[c].classList.add('actions');
      row.tr.append(row.cells[c]);
    }
    row.cancel = h(
      'button',
      {
        type: 'button',
        class: 'danger small',
        onclick: async () => {
          showAlert(error, '');
          try {
            if (await confirmCancel(api, row.job)) refresh();
          } catch (e) {
            showAlert(error, `Could not cancel ${jobLabel(row.job)}: ${describeError(e)}`);
          }
        },
      },
      'Cancel',
    );
    row.cells.Actions.append(row.cancel);
    row.link = h('a', { href: `#/jobs/${job.id}`, class: 'job-link' });
    row.cells.Name.append(row.link, h('span', { class: 'muted mono id' }, shortId(job.id)));
    return row;
  }

  function updateRow(row, job) {
    row.job = job;
    const label = jobLabel(job);
    const key = JSON.stringify([job.state, job.cancel_requested, job.progress, job.name, owners.get(job.owner_id), age(job.created_at)]);
    if (row.key === key) return;
    row.key = key;
    replace(row.cells.State, stateBadge(job));
    row.link.textContent = label;
    replace(row.cells.Kind, job.kind);
    replace(row.cells.Environment, job.environment ?? h('span', { class: 'muted' }, '—'));
    if (row.cells.Owner) replace(row.cells.Owner, owners.get(job.owner_id) ?? shortId(job.owner_id));
    replace(row.cells.Progress, progressView(job, label));
    replace(row.cells.Age, h('time', { datetime: job.created_at, title: dateTime(job.created_at) }, age(job.created_at)));
    row.cancel.setAttribute('aria-label', `Cancel ${label}`);
    row.cancel.hidden = !cancellable(job);
  }

  refresh();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
