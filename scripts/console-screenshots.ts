/**
 * The screenshots of docs/console.md, taken from a real console in Chromium
 * (playwright-core, Debian's /usr/bin/chromium or IDEM_CHROMIUM) over a SQLite
 * store that test/support/console-story.ts fills as an afternoon of traffic.
 * Run: npx tsx scripts/console-screenshots.ts  → docs/images/console-*.png
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startConsole } from '../src/console/server.js';
import { SqliteStore } from '../src/store/sqlite/index.js';
import { afternoon, StoryClock } from '../test/support/console-story.js';

const CHROMIUM = process.env.IDEM_CHROMIUM ?? '/usr/bin/chromium';
const OUT = join(import.meta.dirname, '..', 'docs', 'images');
const TOKEN = 'screenshots-token-0123456789abcdef';

const work = mkdtempSync(join(tmpdir(), 'idem-console-shots-'));
const clock = new StoryClock(Date.UTC(2026, 11, 3, 11, 40, 0, 0));
const store = await SqliteStore.open({ path: join(work, 'idem.db'), clock: clock.read });
try {
  const told = await afternoon(store, clock);
  const running = await startConsole({
    store,
    token: TOKEN,
    port: 0,
    clock: clock.read,
    verifyJournal: async () => {
      throw new Error('not shown');
    },
  });
  const base = running.url.replace(/\/$/, '');
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1360, height: 900 }, deviceScaleFactor: 1 });
    await page.goto(`${base}/login`);
    await page.fill('#operator', 'alice');
    await page.fill('#token', TOKEN);
    await page.click('#login button[type=submit]');
    await page.waitForURL(`${base}/executions`);
    mkdirSync(OUT, { recursive: true });
    const shot = async (name: string, fullPage = false) => {
      await page.screenshot({ path: join(OUT, `console-${name}.png`), fullPage });
      console.log(`docs/images/console-${name}.png`);
    };
    await shot('executions');
    await page.goto(`${base}/executions/${told.approvedAndRepeated}`);
    await page.locator('#life').waitFor();
    await page.setViewportSize({ width: 1360, height: 1180 });
    await shot('execution');
    await page.setViewportSize({ width: 1360, height: 900 });
    await page.goto(`${base}/executions?q=${encodeURIComponent(told.repeatedRequest)}`);
    await shot('search');
    await page.goto(`${base}/approvals`);
    await shot('approvals');
    await page.locator(`#approvals tr[data-ref="${told.waiting[0]}"] button[value=approved]`).click();
    await page.locator('#confirm').waitFor();
    await page.fill('#reason', 'chargeback confirmed by finance');
    await shot('confirm');
    await page.goto(`${base}/activity`);
    await shot('activity');
  } finally {
    await browser.close();
    await running.close();
  }
} finally {
  await store.close();
  rmSync(work, { recursive: true, force: true });
}
