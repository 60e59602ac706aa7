/** Live workers and their devices (GPUs, CPU slots), each with the job holding it. Refreshed every 3 s. */
import { describeError } from './api.mjs';
import { alertBox, cell, h, replace, showAlert } from './dom.mjs';
import { age, dateTime, shortId } from './format.mjs';

const REFRESH_MS = 3000;

export function mountDevices(ctx, main) {
  const { api } = ctx;
  ctx.setTitle('Devices');
  let stopped = false;
  let timer = 0;
  let shown = '';
  const error = alertBox();
  const list = h('div', { class: 'workers' });
  replace(
    main,
    h('h1', { tabindex: '-1' }, 'Devices and workers'),
    h('p', { class: 'hint' }, 'Each live worker, the devices it offers, and the job holding each device.'),
    error,
    list,
  );

  function render(workers) {
    // Re-render only on change, so a focused job link keeps its focus between refreshes.
    const key = JSON.stringify(workers.map((w) => [w.worker_id, w.hostname, w.devices, age(w.last_seen_at)]));
    if (key === shown) return;
    shown = key;
    if (workers.length === 0) {
      replace(list, h('p', { class: 'empty' }, 'No live workers. ', h('code', {}, 'npx opentinker serve'), ' runs one; ', h('code', {}, 'npx opentinker worker'), ' adds more.'));
      return;
    }
    replace(
      list,
      workers.map((w) => {
        const busy = w.devices.filter((d) => d.busy ?? d.job_id).length;
        return h(
          'section',
          { class: 'worker', 'aria-label': `Worker ${w.hostname}` },
          h('h2', {}, w.hostname, ' ', h('span', { class: 'muted mono' }, w.worker_id)),
          h(
            'p',
            { class: 'muted' },
            `${w.devices.length} device${w.devices.length === 1 ? '' : 's'}, ${busy} in use · last seen `,
            h('time', { datetime: w.last_seen_at, title: dateTime(w.last_seen_at) }, `${age(w.last_seen_at)} ago`),
          ),
          h(
            'div',
            { class: 'table-wrap' },
            h(
              'table',
              { class: 'data' },
              h('caption', { class: 'visually-hidden' }, `Devices of ${w.hostname}`),
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  ['Device', 'Kind', 'Name', 'Memory', 'Held by'].map((c) => h('th', { scope: 'col' }, c)),
                ),
              ),
              h(
                'tbody',
                {},
                w.devices.map((d) =>
                  h(
                    'tr',
                    { dataset: { device: d.id } },
                    cell('Device', h('span', { class: 'mono' }, d.id)),
                    cell('Kind', d.kind.toUpperCase()),
                    cell('Name', d.name),
                    cell('Memory', d.memory_mb ? `${(d.memory_mb / 1024).toFixed(1)} GiB` : '—'),
                    cell(
                      'Held by',
                      d.job_id
                        ? h('a', { href: `#/jobs/${d.job_id}` }, `job ${shortId(d.job_id)}`)
                        : d.held_by === 'model_server'
                          ? h('span', {}, 'a model server (chat)')
                          : d.busy
                            ? h('span', {}, "another user's job")
                            : h('span', { class: 'muted' }, 'free'),
                    ),
                  ),
                ),
              ),
            ),
          ),
        );
      }),
    );
  }

  async function refresh() {
    try {
      const workers = await api.get('/v1/devices');
      if (stopped) return;
      showAlert(error, '');
      render(workers);
    } catch (e) {
      if (!stopped) showAlert(error, `Could not load devices: ${describeError(e)}`);
    }
    if (!stopped) timer = setTimeout(refresh, REFRESH_MS);
  }

  refresh();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
