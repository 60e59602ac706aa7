/** Environments the server discovered, including third-party packages that failed to load and why. */
import { describeError } from './api.mjs';
import { alertBox, cell, h, replace, showAlert } from './dom.mjs';

export function mountEnvironments(ctx, main) {
  const { api } = ctx;
  ctx.setTitle('Environments');
  let stopped = false;
  const error = alertBox();
  const body = h('div', {}, h('p', { role: 'status' }, 'Loading…'));
  replace(
    main,
    h('h1', { tabindex: '-1' }, 'Environments'),
    h(
      'p',
      { class: 'hint' },
      'Found at start-up among the server’s dependencies and in its plugins folder. A failed third-party package is listed with its reason; the server runs on without it.',
    ),
    error,
    body,
  );

  (async () => {
    try {
      const envs = await api.get('/v1/environments');
      if (stopped) return;
      const failed = envs.filter((e) => e.status === 'failed').length;
      replace(
        body,
        h('p', { class: 'summary' }, `${envs.length - failed} loaded, ${failed} failed.`),
        h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            { class: 'data envs-table' },
            h('caption', { class: 'visually-hidden' }, 'Environments'),
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Id', 'Status', 'Package', 'Version', 'Source', 'Turns', 'Details'].map((c) => h('th', { scope: 'col' }, c)),
              ),
            ),
            h(
              'tbody',
              {},
              envs.map((e) =>
                h(
                  'tr',
                  { class: e.status === 'failed' ? 'failed' : null, dataset: { env: e.id ?? e.package ?? '' } },
                  cell('Id', e.id ? h('span', { class: 'mono' }, e.id) : h('span', { class: 'muted' }, 'unknown')),
                  cell('Status', h('span', { class: `badge env-${e.status}` }, e.status)),
                  cell('Package', e.package ?? '—', e.first_party ? h('span', { class: 'muted' }, ' (first-party)') : null),
                  cell('Version', e.version ?? '—'),
                  cell('Source', e.source === 'plugins-dir' ? 'plugins folder' : 'dependency'),
                  cell('Turns', e.turn_mode ?? '—'),
                  cell('Details', e.status === 'failed' ? h('span', { class: 'error-text' }, e.error ?? 'failed') : (e.description ?? '')),
                ),
              ),
            ),
          ),
        ),
      );
    } catch (e) {
      if (!stopped) {
        replace(body);
        showAlert(error, `Could not load environments: ${describeError(e)}`);
      }
    }
  })();
  return () => {
    stopped = true;
  };
}
