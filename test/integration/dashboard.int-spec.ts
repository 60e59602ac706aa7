import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Board, O, renderBoard, X } from '@opentinker/env-gomoku';
import playwright from 'playwright-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestApp, TestApp, waitForState } from '../support/test-app';

/**
 * The dashboard in a real browser (Debian's Chromium driven by playwright-core) against a server this
 * test starts: sign-in, live charts over the event stream, cancel, downloads, the other pages, the
 * keyboard and a phone-width screen.
 */
// Functions given to page.evaluate run in the browser; these name its globals for the type checker
// (the project compiles without the DOM library, and adding it would hide DOM use in server code).
declare const document: any;
declare const localStorage: any;
declare function getComputedStyle(element: unknown): { outlineStyle: string };

const CHROMIUM = '/usr/bin/chromium';
/** A browser test waits on a real job and a real browser: generous, for a busy 2-core CI machine. */
const TEST_MS = 60_000;
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const SCREENSHOT = join(process.cwd(), 'docs', 'dashboard.png');
const FIXTURE_PLUGINS = join(process.cwd(), 'test', 'fixtures', 'plugins');

const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  // Skipped, not failed, so `npm test` needs only Node; CI installs chromium and runs these.
  console.warn(`Skipping the dashboard browser tests: ${CHROMIUM} is missing (apt-get install chromium).`);
}

(haveChromium ? describe : describe.skip)('dashboard in Chromium', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  /** Console errors and uncaught exceptions of the current page: a CSP violation or a bug shows here. */
  let problems: string[];
  /** Authorization header of every API call the page made. */
  let apiCalls: { url: string; authorization: string | undefined }[];

  beforeAll(async () => {
    t = await startTestApp({ config: { plugins_dir: FIXTURE_PLUGINS, cpu_slots: 2 } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = await t.app.getUrl();
    browser = await playwright.chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  }, TEST_MS);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  }, TEST_MS);

  async function open(viewport = { width: 1280, height: 800 }, key?: string): Promise<Page> {
    context = await browser.newContext({ viewport, acceptDownloads: true });
    // Fail with the waited-for selector named, well before Jest's own timeout.
    context.setDefaultTimeout(20_000);
    if (key) await context.addInitScript((k) => localStorage.setItem('opentinker.apiKey', k), key);
    page = await context.newPage();
    problems = [];
    apiCalls = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    page.on('pageerror', (e) => problems.push(String(e)));
    page.on('request', (r) => {
      if (new URL(r.url()).pathname.startsWith('/v1/')) apiCalls.push({ url: r.url(), authorization: r.headers().authorization });
    });
    return page;
  }
  afterEach(async () => {
    await context?.close();
  }, TEST_MS);

  async function signIn(key: string): Promise<void> {
    await page.goto(base + '/');
    await page.getByLabel('API key').fill(key);
    await page.getByLabel('API key').press('Enter');
    await page.getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
  }

  const submit = async (body: object) => (await t.request('POST', '/v1/jobs', { body: { kind: 'sleep', ...body } })).body;
  const points = (group: string) => page.locator(`figure.chart[data-group="${group}"]`).getAttribute('data-points').then(Number);

  it(
    'refuses a wrong or malformed key with a clear error and keeps nothing',
    async () => {
      await open();
      await page.goto(base + '/');
      const key = page.getByLabel('API key');
      await key.fill('hello');
      await key.press('Enter');
      await expect(page.getByRole('alert').textContent()).resolves.toContain('That is not an API key');

      await key.fill('otk_this_key_does_not_exist_000000');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'was not accepted' }).waitFor();
      expect(await page.getByRole('alert').textContent()).toBe('The API key was not accepted: Invalid or revoked API key');
      expect(await page.evaluate(() => localStorage.getItem('opentinker.apiKey'))).toBeNull();
      expect(await page.locator('#nav').isHidden()).toBe(true);
      // The refused call carried the key as a bearer header; the browser logs the 401, nothing else.
      expect(apiCalls).toEqual([{ url: `${base}/v1/users/me`, authorization: 'Bearer otk_this_key_does_not_exist_000000' }]);
      expect(problems.filter((p) => !p.includes('401'))).toEqual([]);
    },
    TEST_MS,
  );

  it(
    'signs in, charts a running job as it runs, and cancels it from the keyboard',
    async () => {
      const job = await submit({ name: 'dashboard-live', steps: 400, step_seconds: 0.1 });
      await open();
      await signIn(t.adminKey);
      expect(await page.evaluate(() => localStorage.getItem('opentinker.apiKey'))).toBe(t.adminKey);
      const row = page.locator(`tr[data-job-id="${job.id}"]`);
      await row.getByRole('link', { name: 'dashboard-live' }).click();
      await page.getByRole('heading', { name: 'dashboard-live', level: 1 }).waitFor();

      // The chart gains points while we watch (the stream pushes them; nothing reloads).
      await page.waitForFunction(() => Number(document.querySelector('figure.chart[data-group="metric:step_fraction"]')?.getAttribute('data-points')) >= 2);
      const before = await points('metric:step_fraction');
      await page.waitForFunction((n) => Number(document.querySelector('figure.chart[data-group="metric:step_fraction"]')?.getAttribute('data-points')) > n, before);
      expect(await points('metric:step_fraction')).toBeGreaterThan(before);
      expect(await page.locator('figure.chart[data-group="metric:step_fraction"] canvas').count()).toBeGreaterThan(0);
      expect(await page.locator('figure.chart').evaluateAll((els) => els.map((e) => e.querySelector('h3')?.textContent))).toEqual(['elapsed_seconds', 'step_fraction']);
      await page.locator('pre.log').filter({ hasText: 'step 1/400: tick' }).waitFor();
      expect(await page.locator('.state-line [data-state]').textContent()).toBe('running');

      // Keyboard only: Tab from the top of the page reaches the cancel button, which shows its focus.
      await page.evaluate(() => document.activeElement?.blur());
      let reached = false;
      for (let i = 0; i < 25 && !reached; i++) {
        await page.keyboard.press('Tab');
        reached = await page.evaluate(() => document.activeElement?.getAttribute('aria-label') === 'Cancel dashboard-live');
      }
      expect(reached).toBe(true);
      expect(await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle)).not.toBe('none');
      const dialog = new Promise<string>((resolve) =>
        page.once('dialog', async (d) => {
          resolve(d.message());
          await d.accept();
        }),
      );
      await page.keyboard.press('Enter');
      expect(await dialog).toContain('Cancel dashboard-live?');

      // The state changes on the page from the event stream, and on the server.
      await page.locator('.state-line [data-state="cancelled"]').waitFor();
      await page.getByText('The job has ended.').waitFor();
      expect((await waitForState(t, job.id, ['cancelled'])).state).toBe('cancelled');
      await page.getByRole('link', { name: '← All jobs' }).click();
      await page.locator(`tr[data-job-id="${job.id}"] [data-state="cancelled"]`).waitFor();

      expect(apiCalls.length).toBeGreaterThan(4);
      expect(apiCalls.filter((c) => c.authorization !== `Bearer ${t.adminKey}`)).toEqual([]);
      expect(apiCalls.some((c) => c.url.endsWith(`/v1/jobs/${job.id}/events`))).toBe(true);
      expect(problems).toEqual([]);
    },
    TEST_MS,
  );

  it(
    'shows a finished job with its charts, log and artifacts, and downloads an artifact with the key',
    async () => {
      const job = await submit({ name: 'sleep-demo', steps: 40, step_seconds: 0.02 });
      await waitForState(t, job.id, ['succeeded']);
      await open({ width: 1280, height: 800 }, t.adminKey);
      await page.goto(`${base}/#/jobs/${job.id}`);
      await page.locator('.state-line [data-state="succeeded"]').waitFor();
      await page.waitForFunction(() => document.querySelector('figure.chart[data-group="metric:step_fraction"]')?.getAttribute('data-points') === '40');
      await page.locator('pre.log').filter({ hasText: 'done' }).waitFor();
      expect(await page.locator('pre.spec').textContent()).toContain('"steps": 40');

      await page.getByRole('button', { name: 'Download result.json' }).waitFor();

      const png = await page.screenshot();
      expect(png.subarray(1, 4).toString()).toBe('PNG');
      // The README's picture: rewritten when missing or on request, so ordinary runs leave the tree clean.
      if (!existsSync(SCREENSHOT) || process.env.OPENTINKER_UPDATE_SCREENSHOT === '1') {
        mkdirSync(join(process.cwd(), 'docs'), { recursive: true });
        writeFileSync(SCREENSHOT, png);
      }

      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download result.json' }).click()]);
      expect(download.suggestedFilename()).toBe('result.json');
      expect(JSON.parse(readFileSync((await download.path())!, 'utf8'))).toMatchObject({ steps: 40 });
      expect(apiCalls.find((c) => c.url.endsWith('/artifacts/result.json'))?.authorization).toBe(`Bearer ${t.adminKey}`);
      expect(problems).toEqual([]);
    },
    TEST_MS,
  );

  it(
    'lists devices, environments with the failed plugins and why, and the caller’s keys',
    async () => {
      const running = await submit({ name: 'holds-a-slot', steps: 400, step_seconds: 0.1 });
      await waitForState(t, running.id, ['running']);
      await open({ width: 1280, height: 800 }, t.adminKey);

      await page.goto(`${base}/#/devices`);
      const held = page.locator('tr[data-device]').filter({ hasText: `job ${running.id.slice(0, 8)}` });
      await held.waitFor();
      expect(await page.locator('tr[data-device]').count()).toBe(2);
      await held.getByRole('link').click();
      await page.getByRole('heading', { name: 'holds-a-slot', level: 1 }).waitFor();
      await t.request('POST', `/v1/jobs/${running.id}/cancel`);

      await page.getByRole('link', { name: 'Environments' }).click();
      const explodes = page.locator('tr[data-env="explodes"]');
      await explodes.waitFor();
      expect(await explodes.locator('[data-label="Status"]').textContent()).toBe('failed');
      expect(await explodes.locator('[data-label="Details"]').textContent()).toContain('kaboom at import time');
      expect(await page.locator('tr[data-env="counter"] [data-label="Status"]').textContent()).toBe('loaded');
      expect(await page.locator('tr[data-env="math"]').count()).toBe(1);

      await page.getByRole('link', { name: 'API keys' }).click();
      await page.getByLabel('Name for a new key').fill('ci-laptop');
      await page.getByRole('button', { name: 'Create key' }).click();
      const secret = page.getByLabel('New key “ci-laptop”');
      await secret.waitFor();
      const issued = await secret.inputValue();
      expect(issued).toMatch(/^otk_/);
      expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('New key “ci-laptop”');
      expect((await t.request('GET', '/v1/users/me', { key: issued })).status).toBe(200);
      const tinker = await page.getByLabel('The same key for the Tinker SDK').inputValue();
      expect(tinker).toBe(`tml-${issued}`);
      expect((await t.request('GET', '/v1/users/me', { key: null, headers: { 'x-api-key': tinker } })).status).toBe(200);
      page.once('dialog', (d) => d.accept());
      await page.getByRole('button', { name: 'Revoke key ci-laptop' }).click();
      await page.locator('tr', { hasText: 'ci-laptop' }).getByText('revoked').waitFor();
      expect((await t.request('GET', '/v1/users/me', { key: issued })).status).toBe(401);
      expect(problems).toEqual([]);
    },
    TEST_MS,
  );

  it(
    'lets an admin create a user, whose key signs in to a dashboard without admin pages',
    async () => {
      await open({ width: 1280, height: 800 }, t.adminKey);
      await page.goto(`${base}/#/users`);
      await page.getByLabel('New user’s name').fill('dash-alice');
      await page.getByRole('button', { name: 'Create user' }).click();
      const secret = page.getByLabel('API key of dash-alice');
      await secret.waitFor();
      const aliceKey = await secret.inputValue();
      await page.locator('tr', { hasText: 'dash-alice' }).waitFor();
      await page.getByLabel('New user’s name').fill('dash-alice');
      await page.getByRole('button', { name: 'Create user' }).click();
      await page.getByRole('alert').filter({ hasText: 'Could not create the user' }).waitFor();
      await context.close();

      const mine = (await t.request('POST', '/v1/jobs', { key: aliceKey, body: { kind: 'sleep', name: 'alice-job', steps: 1, step_seconds: 0 } })).body;
      await open();
      await signIn(aliceKey);
      expect(await page.locator('.who-name').textContent()).toBe('dash-alice');
      expect(await page.getByRole('navigation', { name: 'Main' }).getByRole('link').allTextContents()).toEqual(['Jobs', 'Devices', 'Environments', 'API keys']);
      // Her jobs only, and no owner column (that is for admins).
      await page.locator(`tr[data-job-id="${mine.id}"]`).waitFor();
      expect(await page.locator('.jobs-table th').allTextContents()).not.toContain('Owner');
      expect(await page.locator('.jobs-table tbody tr').count()).toBe(1);
      await page.goto(`${base}/#/users`);
      await page.getByRole('heading', { name: 'Not found' }).waitFor();

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('API key').waitFor();
      expect(await page.evaluate(() => localStorage.getItem('opentinker.apiKey'))).toBeNull();
      expect(problems).toEqual([]);
    },
    TEST_MS,
  );

  it(
    'filters jobs by state and finds one by name',
    async () => {
      const stopped = await submit({ name: 'filter-stopped', steps: 400, step_seconds: 0.1 });
      await t.request('POST', `/v1/jobs/${stopped.id}/cancel`);
      await waitForState(t, stopped.id, ['cancelled']);
      const done = await submit({ name: 'filter-target-7f3', steps: 1, step_seconds: 0 });
      await waitForState(t, done.id, ['succeeded']);
      await open({ width: 1280, height: 800 }, t.adminKey);
      await page.goto(`${base}/#/jobs`);
      await page.locator(`tr[data-job-id="${done.id}"]`).waitFor();
      await page.getByLabel('State').selectOption({ label: 'Cancelled' });
      await page.locator(`tr[data-job-id="${done.id}"]`).waitFor({ state: 'detached' });
      await page.locator(`tr[data-job-id="${stopped.id}"]`).waitFor();
      const states = await page.locator('.jobs-table tbody [data-state]').evaluateAll((els) => els.map((e) => e.getAttribute('data-state')));
      expect(new Set(states)).toEqual(new Set(['cancelled']));
      await page.getByLabel('State').selectOption({ label: 'All states' });
      await page.getByLabel('Search by name or id').fill('target-7f');
      await page.waitForFunction(() => document.querySelectorAll('.jobs-table tbody tr').length === 1);
      expect(await page.locator('.jobs-table tbody tr .job-link').textContent()).toBe('filter-target-7f3');
      await page.getByLabel('Search by name or id').fill(stopped.id.slice(0, 13));
      await page.waitForFunction(() => document.querySelectorAll('.jobs-table tbody tr').length === 1);
      expect(await page.locator('.jobs-table tbody tr .job-link').textContent()).toBe('filter-stopped');
      expect(problems).toEqual([]);
    },
    TEST_MS,
  );

  it(
    'shows a train job’s checkpoints with a download, and an inference job’s episodes as chat turns and a gomoku board',
    async () => {
      const env = { id: 'math', config: { style: 'equation', difficulty: 1, test_size: 3 } };
      const model = { preset: 'tiny-char', chat_template: 'plain' };
      const train = (
        await t.request('POST', '/v1/jobs', {
          body: {
            kind: 'train',
            name: 'tiny-train',
            environment: env,
            model,
            algorithm: { rollout_n: 2 },
            rollout: { max_new_tokens: 3 },
            batch_size: 2,
            total_steps: 1,
            val_batch_size: 2,
          },
        })
      ).body;
      expect((await waitForState(t, train.id, ['succeeded', 'failed'], 50_000)).state).toBe('succeeded');
      await open({ width: 1280, height: 800 }, t.adminKey);
      await page.goto(`${base}/#/jobs/${train.id}`);
      const row = page.locator('section[aria-labelledby="checkpoints-title"] tbody tr').first();
      await row.waitFor();
      expect(await row.locator('td[data-label="Model path"]').textContent()).toBe(`job:${train.id}/step-1`);
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download checkpoint 1' }).click()]);
      expect(download.suggestedFilename()).toBe(`job-${train.id}-step-1.tar`);
      expect(
        readFileSync((await download.path())!)
          .subarray(257, 262)
          .toString(),
      ).toBe('ustar');

      const infer = (
        await t.request('POST', '/v1/jobs', {
          body: { kind: 'inference', environment: env, model: { path: `job:${train.id}`, chat_template: 'plain' }, num_tasks: 3, rollout: { max_new_tokens: 3 } },
        })
      ).body;
      expect((await waitForState(t, infer.id, ['succeeded', 'failed'], 50_000)).state).toBe('succeeded');
      // A gomoku game as the gomoku environment draws it, appended to the job's own results file.
      const board = new Board({ size: 5, winLength: 5, allowOverline: true });
      board.place(board.index(2, 2), X);
      board.place(board.index(1, 3), O);
      const game = {
        task_index: 9,
        sample: 0,
        reward: 1,
        finish: 'done',
        result: 'win',
        response: '<move>2,2</move>',
        info: { result: 'win' },
        messages: [
          { role: 'user', content: `Your move.\n${renderBoard(board, board.index(1, 3))}` },
          { role: 'assistant', content: '<move>2,2</move>' },
        ],
      };
      appendFileSync(join(t.home, 'jobs', infer.id, 'work', 'results.jsonl'), JSON.stringify(game) + '\n');

      await page.goto(`${base}/#/jobs/${infer.id}`);
      const results = page.locator('section[aria-labelledby="results-title"]');
      await results.locator('tbody tr').nth(3).waitFor();
      expect(await results.locator('p').first().textContent()).toMatch(/^4 episodes · mean reward [\d.]+ · accuracy [\d.]+% · wins 100\.0%/);
      await page.getByRole('button', { name: 'View episode 0' }).click();
      await page.locator('.episode .turn-user').first().waitFor();
      expect(await page.locator('.episode .turn-assistant').count()).toBe(1);
      expect(await page.locator('.episode .board').count()).toBe(0);
      await page.getByRole('button', { name: 'View episode 9' }).click();
      await page.locator('.episode .board').waitFor();
      expect(await page.locator('.episode .board td.stone-X').count()).toBe(1);
      expect(await page.locator('.episode .board td.stone-O.last').getAttribute('title')).toBe('1,3: O (last move)');
      expect(problems).toEqual([]);
    },
    2 * TEST_MS,
  );

  it(
    'fits a phone-width screen: no sideways scrolling on the jobs list or a job page',
    async () => {
      const job = await submit({ name: 'a-rather-long-job-name-that-has-to-wrap-on-a-phone-0123456789', steps: 40, step_seconds: 0 });
      await waitForState(t, job.id, ['succeeded']);
      await open({ width: 390, height: 844 }, t.adminKey);
      await page.goto(`${base}/#/jobs`);
      await page.locator('tr', { hasText: 'a-rather-long-job-name' }).waitFor();
      const overflow = () =>
        page.evaluate(() => ({
          page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
          // Everything a person can see (column headers are clipped to 1 px on phones: they are for screen readers).
          widest: [...document.querySelectorAll('main *')]
            .filter((e) => !e.closest('thead, caption, .visually-hidden') && e.getClientRects().length > 0)
            .map((e) => ({ right: Math.round(e.getBoundingClientRect().right), what: `${e.tagName}.${e.className}` }))
            .filter((e) => e.right > 390),
        }));
      const jobs = await overflow();
      expect(jobs.page).toBe(0);
      expect(jobs.widest).toEqual([]);
      // Each row is a card with its cells labelled.
      expect(await page.locator('.jobs-table tbody tr').first().locator('td[data-label="State"]').isVisible()).toBe(true);

      await page.locator(`tr[data-job-id="${job.id}"]`).getByRole('link').click();
      await page.waitForFunction(() => document.querySelector('figure.chart[data-group="metric:step_fraction"]')?.getAttribute('data-points') === '40');
      await page.locator('pre.log').filter({ hasText: 'done' }).waitFor();
      const jobPage = await overflow();
      expect(jobPage.page).toBe(0);
      expect(jobPage.widest).toEqual([]);
      expect(problems).toEqual([]);
    },
    TEST_MS,
  );
});
