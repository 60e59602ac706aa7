/** The signed-in user's API keys: list, create (the secret is shown once), revoke. */
import { describeError } from './api.mjs';
import { alertBox, cell, h, replace, showAlert } from './dom.mjs';
import { age, dateTime } from './format.mjs';

/**
 * A just-issued secret, shown once with a copy button, and the same key in the Tinker SDK's form
 * (`tml-` + the key: the SDK refuses keys not starting with `tml-`). Focus moves to the key so keyboard
 * and screen-reader users land on what they must copy now.
 */
export function secretPanel(heading, key) {
  const plain = copyRow(heading, 'Copy the key', key);
  const tinker = copyRow('The same key for the Tinker SDK', 'Copy the Tinker SDK form', `tml-${key}`);
  const panel = h(
    'div',
    { class: 'secret-panel', tabindex: '-1' },
    h('h2', {}, heading),
    h('p', {}, h('strong', {}, 'Copy it now: it will not be shown again.')),
    plain.row,
    h('p', { class: 'hint' }, 'The same key for the Tinker SDK (', h('code', {}, 'api_key='), ' or ', h('code', {}, 'TINKER_API_KEY'), '):'),
    tinker.row,
  );
  queueMicrotask(() => {
    plain.input.focus();
    plain.input.select();
  });
  return panel;
}

function copyRow(label, copyLabel, value) {
  const input = h('input', { type: 'text', readonly: true, value, class: 'mono secret', 'aria-label': label, spellcheck: 'false' });
  const copied = h('span', { class: 'muted', role: 'status' });
  const copy = h(
    'button',
    {
      type: 'button',
      'aria-label': copyLabel,
      onclick: async () => {
        input.select();
        try {
          await navigator.clipboard.writeText(value);
          copied.textContent = 'Copied.';
        } catch {
          // no clipboard API (plain http on another host): the text is selected for Ctrl+C
          copied.textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
        }
      },
    },
    'Copy',
  );
  return { input, row: h('div', { class: 'secret-row' }, input, copy, copied) };
}

export function mountKeys(ctx, main) {
  const { api } = ctx;
  ctx.setTitle('API keys');
  let stopped = false;
  const error = alertBox();
  const fresh = h('div');
  const name = h('input', { id: 'key-name', name: 'name', type: 'text', required: true, maxlength: '64', autocomplete: 'off', placeholder: 'e.g. laptop' });
  const create = h('button', { type: 'submit', class: 'primary' }, 'Create key');
  const body = h('div', {}, h('p', { role: 'status' }, 'Loading…'));
  const form = h(
    'form',
    { class: 'toolbar' },
    h('div', { class: 'field grow' }, h('label', { for: 'key-name' }, 'Name for a new key'), name),
    h('div', { class: 'field' }, create),
  );
  replace(
    main,
    h('h1', { tabindex: '-1' }, 'API keys'),
    h('p', { class: 'hint' }, `Keys of ${ctx.me.name}. Any of them signs in here and to the API and CLI, and, as tml- + the key, to the Tinker SDK.`),
    form,
    error,
    fresh,
    body,
  );

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    showAlert(error, '');
    if (!name.value.trim()) {
      showAlert(error, 'Give the key a name, so you can tell it apart later.');
      name.focus();
      return;
    }
    create.disabled = true;
    try {
      const issued = await api.post('/v1/keys', { name: name.value.trim() });
      name.value = '';
      replace(fresh, secretPanel(`New key “${issued.name}”`, issued.key));
      await load();
    } catch (e) {
      showAlert(error, `Could not create the key: ${describeError(e)}`);
    } finally {
      create.disabled = false;
    }
  });

  async function revoke(key) {
    const mine = signedInWith(ctx, key);
    const question = mine
      ? `Revoke “${key.name}”? You are signed in with this key: you will be signed out.`
      : `Revoke “${key.name}”? Programs using it will be refused from now on.`;
    if (!window.confirm(question)) return;
    showAlert(error, '');
    try {
      await api.del(`/v1/keys/${key.id}`);
      if (mine) return ctx.signOut('You revoked the key you were signed in with. Sign in with another key.', 'status');
      await load();
    } catch (e) {
      showAlert(error, `Could not revoke the key: ${describeError(e)}`);
    }
  }

  async function load() {
    try {
      const keys = await api.get('/v1/keys');
      if (stopped) return;
      replace(
        body,
        h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            { class: 'data keys-table' },
            h('caption', { class: 'visually-hidden' }, 'Your API keys'),
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Name', 'Key starts with', 'Created', 'Last used', 'Status', 'Actions'].map((c) =>
                  h('th', { scope: 'col', class: c === 'Actions' ? 'actions' : null }, c === 'Actions' ? h('span', { class: 'visually-hidden' }, c) : c),
                ),
              ),
            ),
            h(
              'tbody',
              {},
              keys.map((k) => {
                const mine = signedInWith(ctx, k);
                return h(
                  'tr',
                  { dataset: { keyId: k.id } },
                  cell('Name', k.name, mine ? h('span', { class: 'badge' }, 'this browser') : null),
                  cell('Key starts with', h('span', { class: 'mono' }, `${k.prefix}…`)),
                  cell('Created', h('time', { datetime: k.created_at, title: dateTime(k.created_at) }, `${age(k.created_at)} ago`)),
                  cell('Last used', k.last_used_at ? h('time', { datetime: k.last_used_at, title: dateTime(k.last_used_at) }, `${age(k.last_used_at)} ago`) : 'never'),
                  cell('Status', k.revoked_at ? h('span', { class: 'badge state-cancelled' }, 'revoked') : h('span', { class: 'badge state-succeeded' }, 'active')),
                  cell(
                    'Actions',
                    k.revoked_at ? null : h('button', { type: 'button', class: 'danger small', 'aria-label': `Revoke key ${k.name}`, onclick: () => revoke(k) }, 'Revoke'),
                  ),
                );
              }),
            ),
          ),
        ),
      );
    } catch (e) {
      if (!stopped) showAlert(error, `Could not load your keys: ${describeError(e)}`);
    }
  }

  load();
  return () => {
    stopped = true;
  };
}

/** Whether this browser signed in with the listed key (in either form). */
function signedInWith(ctx, key) {
  return ctx.api.key.replace(/^tml-(?=otk_)/, '').startsWith(key.prefix);
}
