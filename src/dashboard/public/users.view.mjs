/** Users (admins only): list, and create a user with its first API key (shown once). */
import { describeError } from './api.mjs';
import { alertBox, cell, h, replace, showAlert } from './dom.mjs';
import { age, dateTime } from './format.mjs';
import { secretPanel } from './keys.view.mjs';

export function mountUsers(ctx, main) {
  const { api } = ctx;
  ctx.setTitle('Users');
  let stopped = false;
  const error = alertBox();
  const fresh = h('div');
  const name = h('input', { id: 'user-name', name: 'name', type: 'text', required: true, autocomplete: 'off', pattern: '[A-Za-z0-9._-]+', placeholder: 'e.g. alice' });
  const role = h('select', { id: 'user-role', name: 'role' }, h('option', { value: 'user' }, 'user'), h('option', { value: 'admin' }, 'admin'));
  const create = h('button', { type: 'submit', class: 'primary' }, 'Create user');
  const body = h('div', {}, h('p', { role: 'status' }, 'Loading…'));
  const form = h(
    'form',
    { class: 'toolbar', novalidate: true },
    h('div', { class: 'field grow' }, h('label', { for: 'user-name' }, 'New user’s name'), name),
    h('div', { class: 'field' }, h('label', { for: 'user-role' }, 'Role'), role),
    h('div', { class: 'field' }, create),
  );
  replace(
    main,
    h('h1', { tabindex: '-1' }, 'Users'),
    h('p', { class: 'hint' }, 'Names use letters, digits, dot, dash and underscore. A new user gets one API key; hand it over safely.'),
    form,
    error,
    fresh,
    body,
  );

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    showAlert(error, '');
    create.disabled = true;
    try {
      const created = await api.post('/v1/users', { name: name.value.trim(), role: role.value });
      name.value = '';
      replace(fresh, secretPanel(`API key of ${created.user.name}`, created.api_key.key));
      await load();
    } catch (e) {
      showAlert(error, `Could not create the user: ${describeError(e)}`);
      name.focus();
    } finally {
      create.disabled = false;
    }
  });

  async function load() {
    try {
      const users = await api.get('/v1/users');
      if (stopped) return;
      replace(
        body,
        h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            { class: 'data users-table' },
            h('caption', { class: 'visually-hidden' }, 'Users'),
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Name', 'Role', 'Created', 'Id'].map((c) => h('th', { scope: 'col' }, c)),
              ),
            ),
            h(
              'tbody',
              {},
              users.map((u) =>
                h(
                  'tr',
                  { dataset: { userId: u.id } },
                  cell('Name', u.name),
                  cell('Role', u.role === 'admin' ? h('span', { class: 'badge' }, 'admin') : 'user'),
                  cell('Created', h('time', { datetime: u.created_at, title: dateTime(u.created_at) }, `${age(u.created_at)} ago`)),
                  cell('Id', h('span', { class: 'mono' }, u.id)),
                ),
              ),
            ),
          ),
        ),
      );
    } catch (e) {
      if (!stopped) showAlert(error, `Could not load users: ${describeError(e)}`);
    }
  }

  load();
  return () => {
    stopped = true;
  };
}
