/**
 * The dashboard shell: sign-in, the signed-in user's key (kept in this browser's local storage and sent
 * as `Authorization: Bearer …` on every API call), navigation and a hash router (`#/jobs`, `#/jobs/<id>`,
 * `#/devices`, `#/environments`, `#/keys`, `#/users`), so the server only ever serves `/`.
 */
import { ApiError, createApi, describeError } from './api.mjs';
import { alertBox, h, replace, showAlert } from './dom.mjs';
import { mountDevices } from './devices.view.mjs';
import { mountEnvironments } from './environments.view.mjs';
import { mountJob } from './job.view.mjs';
import { mountJobs } from './jobs.view.mjs';
import { mountKeys } from './keys.view.mjs';
import { mountUsers } from './users.view.mjs';

const KEY_STORAGE = 'opentinker.apiKey';
const KEY_PATTERN = /^(tml-)?otk_[A-Za-z0-9_-]{20,200}$/;

const ROUTES = [
  { pattern: /^#\/jobs\/([0-9a-f-]{36})$/i, nav: 'jobs', mount: mountJob },
  { pattern: /^#\/jobs$/, nav: 'jobs', mount: mountJobs },
  { pattern: /^#\/devices$/, nav: 'devices', mount: mountDevices },
  { pattern: /^#\/environments$/, nav: 'environments', mount: mountEnvironments },
  { pattern: /^#\/keys$/, nav: 'keys', mount: mountKeys },
  { pattern: /^#\/users$/, nav: 'users', mount: mountUsers, admin: true },
];

const NAV = [
  { id: 'jobs', label: 'Jobs', href: '#/jobs' },
  { id: 'devices', label: 'Devices', href: '#/devices' },
  { id: 'environments', label: 'Environments', href: '#/environments' },
  { id: 'keys', label: 'API keys', href: '#/keys' },
  { id: 'users', label: 'Users', href: '#/users', admin: true },
];

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const account = document.getElementById('account');
const who = document.getElementById('who');

let session = null; // { api, me }
let cleanup = null;

function storedKey() {
  try {
    return localStorage.getItem(KEY_STORAGE);
  } catch {
    return null;
  }
}

function store(key) {
  try {
    if (key) localStorage.setItem(KEY_STORAGE, key);
    else localStorage.removeItem(KEY_STORAGE);
  } catch {
    // storage disabled: the session lasts until the page is closed
  }
}

function unmount() {
  try {
    cleanup?.();
  } finally {
    cleanup = null;
  }
}

/** Checks a key against the server; resolves to a session or throws an ApiError. */
async function openSession(key) {
  const api = createApi({ key, onUnauthorized: (error) => session && session.api === api && signOut(describeError(error)) });
  const me = await api.get('/v1/users/me');
  return { api, me };
}

function signOut(message, kind = 'alert') {
  unmount();
  session = null;
  store(null);
  nav.hidden = true;
  account.hidden = true;
  replace(who);
  showSignIn(message, kind);
}

function showSignIn(message = '', kind = 'alert', { retry } = {}) {
  document.title = 'Sign in · OpenTinker';
  const input = h('input', {
    id: 'api-key',
    name: 'api-key',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    'aria-describedby': 'api-key-hint',
  });
  const error = alertBox();
  const notice = h('p', { class: 'notice', role: 'status' });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = h(
    'form',
    { class: 'sign-in', novalidate: true },
    h('h1', { tabindex: '-1' }, 'Sign in'),
    h('label', { for: 'api-key' }, 'API key'),
    input,
    h(
      'p',
      { id: 'api-key-hint', class: 'hint' },
      'The key ',
      h('code', {}, 'opentinker serve'),
      ' printed on its first start, or one an admin created for you. It stays in this browser until you sign out.',
    ),
    error,
    button,
    notice,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!KEY_PATTERN.test(key)) {
      showAlert(error, key ? 'That is not an API key: keys start with otk_ (or tml-otk_) followed by at least 20 letters, digits, - or _.' : 'Enter your API key.');
      input.focus();
      return;
    }
    button.disabled = true;
    showAlert(error, '');
    try {
      session = await openSession(key);
      store(key);
      start();
    } catch (e) {
      showAlert(error, describeError(e));
      input.select();
      input.focus();
    } finally {
      button.disabled = false;
    }
  });
  replace(main, form);
  if (message && kind === 'alert') showAlert(error, message);
  else notice.textContent = message;
  if (retry) form.append(h('button', { type: 'button', onclick: retry }, 'Try again'));
  input.focus();
}

function renderChrome() {
  const { me } = session;
  const list = h('ul');
  for (const item of NAV) {
    if (item.admin && me.role !== 'admin') continue;
    list.append(h('li', {}, h('a', { href: item.href, dataset: { nav: item.id } }, item.label)));
  }
  replace(nav, list);
  nav.hidden = false;
  replace(who, h('span', { class: 'who-name' }, me.name), me.role === 'admin' ? h('span', { class: 'badge' }, 'admin') : null);
  account.hidden = false;
}

function start() {
  renderChrome();
  if (!ROUTES.some((r) => r.pattern.test(location.hash))) history.replaceState(null, '', '#/jobs');
  route({ focus: true });
}

function route({ focus = true } = {}) {
  if (!session) return;
  const hash = location.hash;
  const match = ROUTES.map((r) => ({ r, m: r.pattern.exec(hash) })).find((x) => x.m);
  unmount();
  if (!match || (match.r.admin && session.me.role !== 'admin')) {
    replace(main, h('h1', { tabindex: '-1' }, 'Not found'), h('p', {}, 'No such page. ', h('a', { href: '#/jobs' }, 'Go to the jobs list.')));
    main.querySelector('h1').focus();
    return;
  }
  for (const link of nav.querySelectorAll('a')) {
    if (link.dataset.nav === match.r.nav) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  main.replaceChildren();
  const ctx = {
    api: session.api,
    me: session.me,
    isAdmin: session.me.role === 'admin',
    setTitle: (title) => (document.title = `${title} · OpenTinker`),
    signOut,
  };
  cleanup = match.r.mount(ctx, main, match.m.slice(1)) ?? null;
  if (focus) main.querySelector('h1')?.focus({ preventScroll: false });
}

function boot() {
  document.getElementById('sign-out').addEventListener('click', () => signOut('You are signed out.', 'status'));
  document.querySelector('.skip-link').addEventListener('click', (event) => {
    event.preventDefault();
    main.focus();
  });
  window.addEventListener('hashchange', () => route());
  resume();
}

/** Signs in with the stored key, if there is one. */
async function resume() {
  const key = storedKey();
  if (!key) return showSignIn();
  replace(main, h('p', { role: 'status' }, 'Signing in…'));
  try {
    session = await openSession(key);
    start();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      store(null);
      showSignIn(`Your saved key is no longer accepted: ${error.message}. Sign in again.`);
    } else {
      showSignIn(describeError(error), 'alert', { retry: () => resume() });
    }
  }
}

boot();
