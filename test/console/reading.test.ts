/**
 * Finding and reading executions in the console, in a real headless Chromium
 * (Debian's package, driven by playwright-core), against a console over a real
 * SQLite store that the engine filled as a gateway would (console-story.ts).
 * The store's clock is the story's: times and "ago" are what the test set.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type RunningConsole, startConsole } from '../../src/console/server.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { claimInput } from '../support/claim-input.js';
import { type Afternoon, afternoon, StoryClock, story } from '../support/console-story.js';

const CHROMIUM = process.env.IDEM_CHROMIUM ?? '/usr/bin/chromium';
const TOKEN = 'reading-test-token-0123456789abcdef';
/** Refreshes come every 5 s; a loaded machine may stretch that. */
const REFRESH_WAIT = { timeout: 40_000, interval: 100 };

const work = mkdtempSync(join(tmpdir(), 'idem-console-reading-'));
const clock = new StoryClock(Date.UTC(2026, 11, 3, 11, 40, 0, 0));
let store: SqliteStore;
let told: Afternoon;
let review = '';
let taskId = '';
let running: RunningConsole;
let base = '';
let browser: Browser;
let context: BrowserContext;
let page: Page;

const refsShown = () =>
  page.locator('#executions tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-ref')));

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`No Chromium at ${CHROMIUM}: apt-get install chromium, or set IDEM_CHROMIUM`);
  store = await SqliteStore.open({ path: join(work, 'idem.db'), clock: clock.read, synchronous: 'normal' });
  told = await afternoon(store, clock);
  review = await story(store, clock).lose(
    'db.drop_table',
    'token:ops-agent',
    { table: 'sessions_old' },
    'review',
  );
  taskId = `tsk_${randomBytes(32).toString('base64url')}`;
  await store.openTask(
    {
      taskId,
      executionId: told.repeated,
      actor: 'token:support-bot',
      generation: 'v2',
      ttlMs: null,
      pollIntervalMs: 500,
    },
    [],
  );
  running = await startConsole({
    store,
    token: TOKEN,
    port: 0,
    clock: clock.read,
    verifyJournal: async () => {
      throw new Error('not used here');
    },
  });
  base = running.url.replace(/\/$/, '');
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  page = await context.newPage();
  await page.goto(`${base}/login`);
  await page.fill('#operator', 'carol');
  await page.fill('#token', TOKEN);
  await page.click('#login button[type=submit]');
  await page.waitForURL(`${base}/executions`);
}, 90_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  await running?.close();
  await store?.close();
  rmSync(work, { recursive: true, force: true });
}, 30_000);

describe('finding and reading an execution', () => {
  it('searches by ref prefix, request id, task id, tool, actor and argument text, from the search box', async () => {
    const search = async (text: string) => {
      await page.goto(`${base}/executions`);
      await page.fill('#search', text);
      await page.press('#search', 'Enter');
      await page.waitForURL(`${base}/executions?q=${encodeURIComponent(text)}`);
      return refsShown();
    };
    expect(await search(told.resolved.slice(0, 22))).toEqual([told.resolved]);
    expect(await search(told.repeatedRequest)).toEqual([told.repeated]);
    expect(await search(taskId)).toEqual([told.repeated]);
    expect(await search('crm.delete_contact')).toEqual([told.waiting[1]]);
    expect(await search('GDPR-2211')).toEqual([told.waiting[1]]);
    const alices = await search('user:alice@example.com');
    expect(alices).toContain(told.unknown);
    for (const actor of await page.locator('#executions tbody tr td:nth-child(4)').allTextContents())
      expect(actor).toBe('user:alice@example.com');
    // The counts are the search's: one unknown of alice's, and all it matched.
    await expect(page.locator('.counts a[data-state=unknown] strong').textContent()).resolves.toBe('1');
    await expect(page.locator('#matched').textContent()).resolves.toContain(
      `${alices.length} executions match`,
    );
    expect(await search('nothing-like-this')).toEqual([]);
    await expect(page.locator('main').textContent()).resolves.toContain('No executions match');
  }, 60_000);

  it('writes times in UTC to the millisecond with how long ago, by the store clock', async () => {
    await page.goto(`${base}/executions?q=${encodeURIComponent(told.waiting[0] as string)}`);
    const created = page.locator(`#executions tr[data-ref="${told.waiting[0]}"] td:nth-child(6)`);
    await expect(created.locator('time').textContent()).resolves.toMatch(
      /^2026-12-03 \d\d:\d\d:\d\d\.\d{3} UTC$/,
    );
    const record = await store.get(told.waiting[0] as string);
    await expect(created.locator('time').getAttribute('datetime')).resolves.toBe(
      new Date(record?.createdAt as number).toISOString(),
    );
    clock.now = (record?.createdAt as number) + 3 * 60_000 + 20_000;
    await page.reload();
    await expect(created.locator('.ago').textContent()).resolves.toBe('3 min ago');
  }, 30_000);

  it('shows a ref on one line in monospace, and its copy button puts it on the clipboard', async () => {
    await page.goto(`${base}/executions`);
    const cell = page.locator(`#executions tr[data-ref="${told.unknown}"] td:first-child`);
    const link = cell.locator('a.mono');
    const box = await link.boundingBox();
    const lineHeight =
      Number.parseFloat(
        await link.evaluate((a) => a.ownerDocument.defaultView?.getComputedStyle(a).lineHeight ?? ''),
      ) || 18;
    expect(box?.height).toBeLessThan(lineHeight * 1.5);
    await expect(
      link.evaluate((a) => a.ownerDocument.defaultView?.getComputedStyle(a).fontFamily),
    ).resolves.toMatch(/mono/i);
    await cell.locator('button.copy').click();
    await cell.locator('button.copy[data-copied]').waitFor();
    await expect(page.evaluate('navigator.clipboard.readText()')).resolves.toBe(told.unknown);
  }, 30_000);

  it('shows arguments and journal details indented, not as one line of JSON', async () => {
    await page.goto(`${base}/executions/${told.approvedAndRepeated}`);
    const args = await page.locator('#arguments').textContent();
    expect(args).toContain('\n  "amount_cents": 25000,\n');
    await expect(page.locator('#arguments').getAttribute('data-json')).resolves.toBe('true');
    const detail = page.locator('#timeline tbody tr', { hasText: 'operator:bob' }).first().locator('dl.kv');
    await expect(detail.locator('dt').allTextContents()).resolves.toContain('by');
    await expect(page.locator('#timeline').textContent()).resolves.not.toContain('{"by"');
  }, 30_000);
});

describe('seeing what happened at a glance', () => {
  it("draws the execution's life: states with their durations, the decision and the repeats, on one axis", async () => {
    await page.goto(`${base}/executions/${told.approvedAndRepeated}`);
    const spans = page.locator('#life g[data-state]');
    await expect(spans.evaluateAll((gs) => gs.map((g) => g.getAttribute('data-state')))).resolves.toEqual([
      'accepted',
      'awaiting_approval',
      'authorized',
      'dispatched',
      'completed',
    ]);
    // The story waited 3 min 12 s for the approval and the target took 1.24 s.
    await expect(page.locator('#life g[data-state=awaiting_approval]').getAttribute('data-ms')).resolves.toBe(
      '192000',
    );
    await expect(page.locator('#life g[data-state=dispatched]').getAttribute('data-ms')).resolves.toBe(
      '1240',
    );
    await expect(
      page.locator('#life g[data-state=awaiting_approval] text').first().textContent(),
    ).resolves.toBe('awaiting approval · 3 min 12 s');
    const marks = await page
      .locator('#life g[data-mark]')
      .evaluateAll((gs) => gs.map((g) => g.getAttribute('data-mark')));
    expect(marks.filter((m) => m === 'decision')).toHaveLength(1);
    expect(marks.filter((m) => m === 'repeat')).toHaveLength(3);
    expect(marks.filter((m) => m === 'delivered')).toHaveLength(1);
    await expect(page.locator('#life g[data-mark=decision] text').textContent()).resolves.toBe(
      'approved by operator:bob',
    );
    // Each mark sits on the axis where its time falls: the decision before the send, the repeats after.
    const xOf = async (selector: string) =>
      Number(await page.locator(selector).first().locator('text').getAttribute('x'));
    expect(await xOf('#life g[data-mark=decision]')).toBeLessThan(
      Number(await page.locator('#life g[data-state=dispatched] rect').getAttribute('x')),
    );
    await expect(page.locator('#life-summary').textContent()).resolves.toContain('1 attempt · 3 replays');
  }, 30_000);

  it('counts attempts and replays in the list, and calls an unknown outcome by one word', async () => {
    await page.goto(`${base}/executions`);
    const row = page.locator(`#executions tr[data-ref="${told.approvedAndRepeated}"]`);
    await expect(row.locator('[data-cell=attempts]').textContent()).resolves.toBe('1');
    await expect(row.locator('[data-cell=replays]').textContent()).resolves.toBe('3');
    await expect(
      page.locator(`#executions tr[data-ref="${told.repeated}"] [data-cell=replays]`).textContent(),
    ).resolves.toBe('1');
    // Unknown outcomes (one of a `review` tool among them) on top, each called what the count calls it.
    expect((await store.get(review))?.replay).toBe('review');
    const top = await page
      .locator('#executions tbody.attention tr')
      .evaluateAll((rows) =>
        rows.map((r) => [r.getAttribute('data-ref'), r.querySelector('.badge')?.textContent]),
      );
    expect(top.slice(0, 2)).toEqual(
      expect.arrayContaining([
        [review, 'unknown'],
        [told.unknown, 'unknown'],
      ]),
    );
    await expect(page.locator('.counts a[data-state=unknown]').textContent()).resolves.toContain('unknown');
    await expect(page.locator('.counts a[data-state=unknown] strong').textContent()).resolves.toBe('2');
    await expect(page.locator('#executions').textContent()).resolves.not.toContain('review');
  }, 30_000);

  it('charts the journal by kind per hour: an unknown later resolved still shows in its hour', async () => {
    await page.goto(`${base}/activity`);
    const legend = (series: string) =>
      page.locator(`#activity-legend strong[data-series=${series}]`).textContent();
    // Three outcomes went unknown (one since resolved); one operator resolution; one approval given.
    await expect(legend('unknown')).resolves.toBe('3');
    await expect(legend('operator_resolution')).resolves.toBe('1');
    await expect(legend('authorized')).resolves.toBe('1');
    await expect(legend('awaiting_approval')).resolves.toBe('3');
    await expect(page.locator('#activity-chart rect[data-series=unknown]').count()).resolves.toBeGreaterThan(
      0,
    );
  }, 30_000);
});

describe('knowing it is live', () => {
  it('marks the page live with when it was updated, and pauses until resumed', async () => {
    await page.goto(`${base}/executions`);
    const mark = page.locator('#live-mark');
    await expect(mark.getAttribute('data-state')).resolves.toBe('live');
    clock.advance(61_000);
    const later = new Date(clock.now).toISOString().slice(11, 23);
    await vi.waitFor(
      async () => expect(await page.locator('#live-updated').textContent()).toBe(`${later} UTC`),
      REFRESH_WAIT,
    );

    await page.click('#live-pause');
    await expect(mark.getAttribute('data-state')).resolves.toBe('paused');
    await expect(page.locator('#live-pause').textContent()).resolves.toBe('Resume');
    const fresh = await story(store, clock).run('mail.send', 'token:support-bot', { to: 'late@example.com' });
    // A refresh came due while paused and was skipped: the new call is not on the page.
    await vi.waitFor(
      async () =>
        expect(Number(await page.locator('main').getAttribute('data-paused-ticks'))).toBeGreaterThan(0),
      REFRESH_WAIT,
    );
    await expect(page.locator(`#executions tr[data-ref="${fresh}"]`).count()).resolves.toBe(0);
    // The pause holds on another page of the same tab.
    await page.goto(`${base}/activity`);
    await expect(page.locator('#live-mark').getAttribute('data-state')).resolves.toBe('paused');
    await page.goto(`${base}/executions`);
    await page.click('#live-pause');
    await expect(mark.getAttribute('data-state')).resolves.toBe('live');
    await page.locator(`#executions tr[data-ref="${fresh}"]`).waitFor(REFRESH_WAIT);
  }, 90_000);
});

describe('many executions', () => {
  it('shows 2,000 executions a page at a time, counted by state', async () => {
    const before = (await store.countByState()).accepted;
    const claims = Array.from({ length: 2000 }, () =>
      claimInput({ tool: 'bulk.noop', state: 'accepted', argumentsPreview: '{"n":1}' }),
    );
    for (let i = 0; i < claims.length; i += 200)
      await Promise.all(claims.slice(i, i + 200).map((c) => store.claim(c)));
    await page.goto(`${base}/executions`);
    await expect(page.locator('.counts a[data-state=accepted] strong').textContent()).resolves.toBe(
      String(before + 2000),
    );
    const first = (await refsShown()).slice(await page.locator('#executions tbody.attention tr').count());
    expect(first).toHaveLength(50);
    const newest = claims
      .map((c) => c.id)
      .sort()
      .reverse();
    expect(first).toEqual(newest.slice(0, 50));
    await page.click('#older');
    await page.waitForURL(/before=/);
    // Older pages do not pin the ones waiting for a human again.
    await expect(page.locator('#executions tbody.attention').count()).resolves.toBe(0);
    expect(await refsShown()).toEqual(newest.slice(50, 100));
    await page.click('#newest');
    await page.waitForURL(`${base}/executions?`);
    expect((await refsShown()).slice(-50)).toEqual(newest.slice(0, 50));
  }, 90_000);
});
