/**
 * The Approvals page in a real headless Chromium (Debian's package, driven by
 * playwright-core) against a console over a real SQLite store, to which the
 * engine writes approval requests as a gateway would. The pointer and the
 * clicks are the browser's own: a click lands wherever the pointer rests.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { decideAsOperator } from '../../src/approval/operator-decision.js';
import { SESSION_TTL_MS } from '../../src/console/auth.js';
import { type RunningConsole, startConsole } from '../../src/console/server.js';
import { resolveContract } from '../../src/contracts/contract.js';
import { idemCodeOf, META } from '../../src/executions/answers.js';
import type { ToolCall } from '../../src/executions/call.js';
import { ExecutionEngine } from '../../src/executions/engine.js';
import { Fingerprinter } from '../../src/identity/fingerprint.js';
import { openStore } from '../../src/store/index.js';
import type { ExecutionStore } from '../../src/store/types.js';
import { REPO_ROOT } from '../support/node22.js';

const CHROMIUM = process.env.IDEM_CHROMIUM ?? '/usr/bin/chromium';
const SCREENSHOTS = join(REPO_ROOT, 'artifacts/console');
const TOKEN = 'approvals-test-token-0123456789abcdef';
/** Refreshes come every 5 s; a loaded machine may stretch that. */
const REFRESH_WAIT = { timeout: 40_000 };

const work = mkdtempSync(join(tmpdir(), 'idem-console-approvals-'));
let store: ExecutionStore;
let engine: ExecutionEngine;
let running: RunningConsole;
let base = '';
let browser: Browser;
let context: BrowserContext;
let page: Page;
/** Moves the console's clock (its sessions), not the store's. */
let consoleSkew = 0;

const contract = resolveContract(
  { replay: 'status', approval: 'every_call', attach_window: '1h', approval_timeout: '1h' },
  undefined,
);

/** An agent's call that waits for an approval; returns its ref. */
async function ask(order: string): Promise<string> {
  const call: ToolCall = {
    tool: 'charge_card',
    channel: 'http',
    target: 'payments',
    credentialRef: 'payments-key',
    method: 'tools/call',
    arguments: { order, cents: 1200 },
    contract,
    caller: { actor: 'token:agent', session: 's1' },
  };
  const answer = await engine.execute(call, async () => ({ content: [{ type: 'text', text: 'charged' }] }));
  expect(idemCodeOf(answer)).toBe('IDEM_AWAITING_APPROVAL');
  return answer._meta?.[META.executionId] as string;
}

/** Waits for a condition the page reaches on a refresh (the page's CSP forbids waitForFunction's eval). */
async function until(condition: () => Promise<boolean>): Promise<void> {
  await vi.waitFor(async () => expect(await condition()).toBe(true), { ...REFRESH_WAIT, interval: 100 });
}

const decisionOf = async (ref: string) => (await store.getApproval(ref))?.decision;

async function login(): Promise<void> {
  await page.goto(`${base}/login`);
  await page.fill('#operator', 'alice');
  await page.fill('#token', TOKEN);
  await page.click('#login button[type=submit]');
  await page.waitForURL(`${base}/executions`);
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`No Chromium at ${CHROMIUM}: apt-get install chromium, or set IDEM_CHROMIUM`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  store = await openStore({ kind: 'sqlite', path: join(work, 'idem.db') });
  engine = new ExecutionEngine({ store, fingerprinter: new Fingerprinter(randomBytes(32)) });
  running = await startConsole({
    store,
    token: TOKEN,
    port: 0,
    clock: () => Date.now() + consoleSkew,
    verifyJournal: async () => {
      throw new Error('not used here');
    },
  });
  base = running.url.replace(/\/$/, '');
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  page = await context.newPage();
  await login();
}, 60_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  await running?.close();
  await store?.close();
  rmSync(work, { recursive: true, force: true });
}, 30_000);

describe('the Approvals page decides exactly the request the operator was looking at', () => {
  it('a newer request arriving under a resting pointer is not the one the click approves', async () => {
    const older = await ask('A-1');
    await page.goto(`${base}/approvals`);
    await expect(page.locator('#approvals tbody tr').first().getAttribute('data-ref')).resolves.toBe(older);
    const approve = page.locator(`#approvals tr[data-ref="${older}"] button[value=approved]`);
    const before = await approve.boundingBox();
    if (!before) throw new Error('no Approve button on screen');
    await page.mouse.move(before.x + before.width / 2, before.y + before.height / 2);

    const newer = await ask('B-1');
    // The refresh that brought the newer request in: counted in the banner (or, as before, inserted on top).
    await until(
      async () =>
        (await page.locator('#approvals-news[data-news="1"]').count()) +
          (await page.locator(`#approvals tr[data-ref="${newer}"]`).count()) >
        0,
    );
    const news = await page.locator('#approvals-news').allTextContents();
    const after = await approve.boundingBox();
    await page.screenshot({ path: join(SCREENSHOTS, 'approvals-new-request.png'), fullPage: true });

    // A click where the pointer rests, as a hand would make it: it opens the older request's confirmation.
    await page.mouse.down();
    await page.mouse.up();
    await page.waitForURL(`**/approvals/${older}/decide?**`);
    await expect(page.locator('#confirm-arguments').textContent()).resolves.toContain('A-1');
    expect(await decisionOf(older)).toBeNull();
    await page.click('#confirm button[value=approved]');
    await page.waitForURL('**/decide');
    expect(await decisionOf(newer)).toBeNull();
    expect(await decisionOf(older)).toBe('approved');
    // The page says what was approved: that request, those arguments.
    const notice = page.locator('[role=status][data-decided-ref]');
    await expect(notice.getAttribute('data-decided-ref')).resolves.toBe(older);
    const shown = (await store.get(older))?.fingerprint;
    await expect(notice.getAttribute('data-decided-digest')).resolves.toBe(shown);
    await expect(notice.textContent()).resolves.toMatch(
      new RegExp(`${older}: approved by operator:alice — charge_card on http:payments .*A-1.*digest fp_`),
    );
    // Nothing moved; the newer request was counted, not inserted.
    expect(after).toEqual(before);
    expect(news.join('')).toContain('1 new request');
  }, 90_000);

  it('a request decided elsewhere stays where it was, says so, and its buttons no longer work', async () => {
    const ref = await ask('C-1');
    await page.goto(`${base}/approvals`);
    const row = page.locator(`#approvals tr[data-ref="${ref}"]`);
    const before = await row.boundingBox();
    await decideAsOperator(store, ref, 'denied', { by: 'operator:bob', via: 'cli', reason: 'not today' });
    await until(async () => (await row.getAttribute('data-state')) === 'gone');
    await expect(row.locator('[data-cell=status]').textContent()).resolves.toContain('no longer pending');
    await expect(row.locator('button[value=approved]').isDisabled()).resolves.toBe(true);
    expect((await row.boundingBox())?.y).toBe(before?.y);
  }, 90_000);

  it('a decision naming another digest, none, or a decided request is refused, and says why', async () => {
    const ref = await ask('D-1');
    const digest = (await store.get(ref))?.fingerprint as string;
    await page.goto(`${base}/approvals`);
    const csrf = (await page.locator('header input[name=csrf]').getAttribute('value')) as string;
    const cookie = (await context.cookies()).find((c) => c.name === 'idem_console');
    const decide = (fields: Record<string, string>) =>
      fetch(`${base}/approvals/${ref}/decide`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          cookie: `idem_console=${cookie?.value}`,
        },
        body: new URLSearchParams({ csrf, decision: 'approved', ...fields }).toString(),
      });

    const wrong = await decide({ digest: 'fp_not-what-was-shown' });
    expect(wrong.status).toBe(409);
    const wrongText = await wrong.text();
    expect(wrongText).toContain('nothing was decided');
    expect(wrongText).toContain(digest);
    const none = await decide({});
    expect(none.status).toBe(400);
    expect(await none.text()).toContain('did not name the arguments digest');
    expect(await decisionOf(ref)).toBeNull();

    expect((await decide({ digest })).status).toBe(200);
    expect(await decisionOf(ref)).toBe('approved');
    const again = await decide({ digest });
    expect(again.status).toBe(409);
    expect(await again.text()).toContain('was already decided: approved by operator:alice via console');
  }, 30_000);

  it("decides from the execution's own page, after a confirmation that shows the original record", async () => {
    const ref = await ask('F-1');
    const record = await store.get(ref);
    await page.goto(`${base}/executions/${ref}`);
    await page.click('#decide button[value=denied]');
    await page.waitForURL(`**/approvals/${ref}/decide?**`);
    // What is decided on: tool, actor, where, the arguments and their digest, first dispatch, known outcome.
    await expect(page.locator('h1').textContent()).resolves.toBe('Deny this request?');
    await expect(page.locator('#confirm-tool').textContent()).resolves.toBe('charge_card');
    await expect(page.locator('#confirm-actor').textContent()).resolves.toContain('token:agent');
    await expect(page.locator('#original').textContent()).resolves.toContain(
      'http:payments with credential "payments-key"',
    );
    await expect(page.locator('#confirm-arguments').textContent()).resolves.toContain('"order": "F-1"');
    await expect(page.locator('#confirm-digest .mono').textContent()).resolves.toBe(record?.fingerprint);
    await expect(page.locator('#confirm-dispatch').textContent()).resolves.toContain('never');
    await expect(page.locator('#confirm-outcome').textContent()).resolves.toContain('it has not run');
    // Nothing is decided until it is confirmed.
    expect(await decisionOf(ref)).toBeNull();
    await page.fill('#reason', 'no order F-1 in the shop');
    await page.click('#confirm button[value=denied]');
    await expect(page.locator('[role=status][data-decided-ref]').getAttribute('data-decision')).resolves.toBe(
      'denied',
    );
    expect(await store.getApproval(ref)).toMatchObject({
      decision: 'denied',
      decidedBy: 'operator:alice',
      decidedVia: 'console',
      reason: 'no order F-1 in the shop',
    });
    const journaled = (await store.journalFor(ref)).find((e) => e.kind === 'denied');
    expect(journaled?.detail).toMatchObject({ by: 'operator:alice', via: 'console' });

    // Opened from a digest that is not the request's: it says so; decided: no form at all.
    await page.goto(`${base}/approvals/${ref}/decide?decision=approved&digest=fp_something-else`);
    await expect(page.locator('#changed').count()).resolves.toBe(1);
    await expect(page.locator('#decided').textContent()).resolves.toContain('denied by operator:alice');
    await expect(page.locator('#confirm').count()).resolves.toBe(0);
    // The confirmation is a page: its POST still needs the session's CSRF token.
    const cookie = (await context.cookies()).find((c) => c.name === 'idem_console');
    const other = await ask('F-2');
    const forged = await fetch(`${base}/approvals/${other}/decide`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: `idem_console=${cookie?.value}`,
      },
      body: new URLSearchParams({
        decision: 'approved',
        digest: (await store.get(other))?.fingerprint as string,
      }).toString(),
    });
    expect(forged.status).toBe(403);
    expect(await decisionOf(other)).toBeNull();
  }, 60_000);

  it('when the console session ends, the page says it is no longer live and stops', async () => {
    await ask('E-1');
    await page.goto(`${base}/approvals`);
    consoleSkew += SESSION_TTL_MS;
    const ended = page.locator('#live-notice.ended[role=alert]');
    await ended.waitFor(REFRESH_WAIT);
    await expect(ended.textContent()).resolves.toContain('session has ended');
    await expect(ended.textContent()).resolves.toContain('no longer live');
    await expect(ended.locator('a').getAttribute('href')).resolves.toBe('/login');
    await expect(page.locator('main').getAttribute('data-live-state')).resolves.toBe('ended');
    await expect(page.locator('#approvals button[value=approved]').first().isDisabled()).resolves.toBe(true);
    await page.screenshot({ path: join(SCREENSHOTS, 'session-ended.png'), fullPage: true });
  }, 90_000);
});
