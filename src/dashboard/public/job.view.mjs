/**
 * One job: state and progress, live metric charts, log tail, artifacts (downloaded with the key: a plain
 * link could not send it), the stored spec, and cancel. Live parts follow the job's event stream; the
 * stream replays the job's history first, so charts fill in from step 1 whenever the page is opened.
 */
import { describeError } from './api.mjs';
import { MetricCharts } from './charts.mjs';
import { alertBox, h, replace, showAlert } from './dom.mjs';
import { followEventStream } from './event-stream.mjs';
import { bytes, cancellable, dateTime, duration, FINAL_STATES, shortId } from './format.mjs';
import { jobOutputs, loadJobKinds } from './job-kinds.mjs';
import { confirmCancel, jobLabel, progressView, stateBadge } from './jobs.view.mjs';
import { checkpointsSection, resultsSection, saveBlob } from './results.view.mjs';

const LOG_LINES = 200;
const LOG_REFRESH_MS = 1000;

const STREAM_TEXT = {
  connecting: 'Connecting to live updates…',
  live: 'Live: updates as the job runs.',
  reconnecting: 'Connection lost; reconnecting…',
  ended: 'The job has ended.',
};

/** Calls `fn` at most once per `ms`, always running a call that arrives in between afterwards. */
function throttle(fn, ms) {
  let timer = 0;
  let lastRun = 0;
  const wrapped = () => {
    if (timer) return;
    const wait = Math.max(0, lastRun + ms - Date.now());
    timer = setTimeout(() => {
      timer = 0;
      lastRun = Date.now();
      fn();
    }, wait);
  };
  wrapped.cancel = () => clearTimeout(timer);
  return wrapped;
}

export function mountJob(ctx, main, [id]) {
  const { api } = ctx;
  const abort = new AbortController();
  let job = null;
  let charts = null;
  /** The page's output sections for the job's kind (see job-kinds.mjs); none until the kinds are known. */
  let outputs = { results: false, resultsFile: null, checkpoints: false };

  const title = h('h1', { tabindex: '-1' }, `Job ${shortId(id)}`);
  const error = alertBox();
  const details = h('dl', { class: 'details' });
  const stateLine = h('p', { class: 'state-line', role: 'status' });
  const streamStatus = h('p', { class: 'muted stream-status' });
  const cancelButton = h('button', { type: 'button', class: 'danger', hidden: true, onclick: () => cancel() }, 'Cancel job');
  const chartsBox = h('div', { class: 'charts' });
  const noMetrics = h('p', { class: 'empty' }, 'No metrics yet.');
  const log = h('pre', { class: 'log', tabindex: '0', 'aria-label': `Log, last ${LOG_LINES} lines` });
  const artifacts = h('ul', { class: 'artifacts' });
  const spec = h('pre', { class: 'spec', tabindex: '0', 'aria-label': 'Job spec (JSON)' });
  const checkpoints = checkpointsSection({ api, jobId: id, error, signal: abort.signal });
  const results = resultsSection({ api, jobId: id, error, signal: abort.signal });
  const rlOutputs = h('div', {});

  replace(
    main,
    h('p', { class: 'breadcrumb' }, h('a', { href: '#/jobs' }, '← All jobs')),
    h('div', { class: 'job-head' }, title, h('div', { class: 'job-actions' }, cancelButton)),
    error,
    stateLine,
    details,
    streamStatus,
    h('section', { 'aria-labelledby': 'metrics-title' }, h('h2', { id: 'metrics-title' }, 'Metrics'), noMetrics, chartsBox),
    h('section', { 'aria-labelledby': 'log-title' }, h('h2', { id: 'log-title' }, `Log (last ${LOG_LINES} lines)`), log),
    rlOutputs,
    h('section', { 'aria-labelledby': 'artifacts-title' }, h('h2', { id: 'artifacts-title' }, 'Artifacts'), artifacts),
    h('section', { 'aria-labelledby': 'spec-title' }, h('h2', { id: 'spec-title' }, 'Spec'), spec),
  );
  charts = new MetricCharts(chartsBox);

  const fail = (what) => (e) => {
    if (abort.signal.aborted || e?.name === 'AbortError') return;
    showAlert(error, `${what}: ${describeError(e)}`);
  };

  function renderJob() {
    const label = jobLabel(job);
    ctx.setTitle(label);
    title.textContent = label;
    replace(stateLine, stateBadge(job), ' ', progressView(job, label), job.progress?.message ? h('span', { class: 'muted' }, ` ${job.progress.message}`) : null);
    const rows = [
      ['Id', h('span', { class: 'mono' }, job.id)],
      ['Kind', job.kind],
      ['Environment', job.environment ?? '—'],
      ['Created', dateTime(job.created_at)],
      ['Started', dateTime(job.started_at)],
      ['Finished', dateTime(job.finished_at)],
      ['Run time', job.started_at ? duration(job.started_at, job.finished_at) : '—'],
      ['Worker', job.worker_id ?? '—'],
      ['Devices', job.devices?.length ? job.devices.join(', ') : '—'],
      ['Attempts', `${job.attempts} of ${job.max_attempts}`],
      ['Priority', String(job.priority)],
    ];
    if (job.error) rows.push(['Error', h('span', { class: 'error-text' }, job.error)]);
    if (job.exit_code !== null && job.exit_code !== undefined) rows.push(['Exit code', String(job.exit_code)]);
    replace(
      details,
      rows.map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v))),
    );
    cancelButton.hidden = !cancellable(job);
    cancelButton.setAttribute('aria-label', `Cancel ${label}`);
    replace(spec, JSON.stringify(job.spec, null, 2));
  }

  async function loadJob() {
    try {
      job = await api.get(`/v1/jobs/${id}`, { signal: abort.signal });
      renderJob();
      return true;
    } catch (e) {
      fail('Could not load the job')(e);
      return false;
    }
  }

  async function loadLog() {
    try {
      const text = await api.text(`/v1/jobs/${id}/logs?tail=${LOG_LINES}`, { signal: abort.signal });
      const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
      log.textContent = text || '(no output yet)';
      if (atBottom) log.scrollTop = log.scrollHeight;
    } catch (e) {
      fail('Could not load the log')(e);
    }
  }
  const refreshLog = throttle(loadLog, LOG_REFRESH_MS);

  async function loadArtifacts() {
    try {
      const list = await api.get(`/v1/jobs/${id}/artifacts`, { signal: abort.signal });
      replace(
        artifacts,
        list.length === 0
          ? h('li', { class: 'muted' }, 'None yet.')
          : list.map((a) =>
              h(
                'li',
                {},
                h('button', { type: 'button', class: 'link', onclick: () => download(a.name) }, `Download ${a.name}`),
                h('span', { class: 'muted' }, ` ${bytes(a.size)}`),
              ),
            ),
      );
    } catch (e) {
      fail('Could not list the artifacts')(e);
    }
  }
  const refreshArtifacts = throttle(loadArtifacts, LOG_REFRESH_MS);

  async function download(name) {
    showAlert(error, '');
    try {
      saveBlob(await api.blob(`/v1/jobs/${id}/artifacts/${encodeURIComponent(name)}`), name);
    } catch (e) {
      showAlert(error, `Could not download ${name}: ${describeError(e)}`);
    }
  }

  async function cancel() {
    showAlert(error, '');
    try {
      const updated = await confirmCancel(api, job);
      if (updated) {
        job = updated;
        renderJob();
      }
    } catch (e) {
      showAlert(error, `Could not cancel: ${describeError(e)}`);
    }
  }

  function onEvent({ event, data }) {
    switch (event) {
      case 'state':
        if (job && data?.state) {
          job = { ...job, state: data.state };
          if (data.state === 'running' && !job.started_at) job.started_at = data.time;
          renderJob();
        }
        if (FINAL_STATES.includes(data?.state)) loadJob();
        break;
      case 'progress':
        if (job) {
          job = { ...job, progress: { step: data.step, total: data.total ?? null, message: data.message ?? null } };
          renderJob();
        }
        break;
      case 'metrics':
        charts.add(data?.points ?? []);
        noMetrics.hidden = charts.size > 0;
        break;
      case 'log':
        refreshLog();
        break;
      case 'artifact':
        refreshArtifacts();
        if (outputs.results && data?.name === outputs.resultsFile) results.load();
        break;
      case 'end':
        loadJob();
        loadLog();
        loadArtifacts();
        loadOutputs();
        break;
    }
  }

  /** The sections the job's kind has: results when it writes a results file, checkpoints when it saves them. */
  async function loadOutputs() {
    try {
      outputs = jobOutputs(await loadJobKinds(api, { signal: abort.signal }), job.kind);
    } catch (e) {
      fail('Could not load the job kinds')(e);
      return;
    }
    replace(rlOutputs, outputs.results ? results.section : null, outputs.checkpoints ? checkpoints.section : null);
    if (outputs.results) results.load();
    if (outputs.checkpoints) checkpoints.load();
  }

  (async () => {
    if (!(await loadJob())) return;
    loadLog();
    loadArtifacts();
    loadOutputs();
    try {
      await followEventStream(`/v1/jobs/${id}/events`, {
        headers: api.headers(),
        signal: abort.signal,
        onEvent,
        onStatus: (s) => (streamStatus.textContent = STREAM_TEXT[s] ?? ''),
      });
    } catch (e) {
      fail('Live updates stopped')(e);
    }
  })();

  return () => {
    abort.abort();
    refreshLog.cancel();
    refreshArtifacts.cancel();
    charts.destroy();
  };
}
