/**
 * The console's Executions page over a big store: fills a SQLite store through
 * the store API (claims and outcomes with their journal events, as the engine
 * writes them), then measures in Chromium (playwright-core) the first
 * contentful paint of the list, a search that matches nothing (the worst
 * case: the whole table is read), and an older page.
 * Run: npx tsx scripts/console-first-paint.ts [10000 100000 …]
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { startConsole } from '../src/console/server.js';
import { SqliteStore } from '../src/store/sqlite/index.js';
import { claimInput } from '../test/support/claim-input.js';

const CHROMIUM = process.env.IDEM_CHROMIUM ?? '/usr/bin/chromium';
const TOKEN = 'first-paint-token-0123456789abcdef';
const RUNS = 5;
const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);

async function fill(store: SqliteStore, n: number): Promise<void> {
  const tools = ['payments.refund', 'mail.send', 'github.create_issue', 'crm.update_contact'];
  const batch = 500;
  for (let start = 0; start < n; start += batch) {
    await Promise.all(
      Array.from({ length: Math.min(batch, n - start) }, async (_, k) => {
        const i = start + k;
        const input = claimInput({
          tool: tools[i % tools.length] as string,
          actor: `token:agent-${i % 7}`,
          state: 'dispatched',
          argumentsPreview: JSON.stringify({ order: `ORD-${i}`, cents: 100 + (i % 900) }),
        });
        const requestRef = `req:${randomBytes(6).toString('hex')}`;
        await store.claim(input, {
          events: [
            { kind: 'received', executionId: input.id, actor: input.actor, tool: input.tool, requestRef },
            { kind: 'accepted', executionId: input.id, actor: input.actor, tool: input.tool, requestRef },
            { kind: 'dispatched', executionId: input.id, actor: input.actor, tool: input.tool, requestRef },
          ],
        });
        if (i % 500 === 0) return; // stays dispatched: some rows still in flight
        await store.transition({
          id: input.id,
          from: ['dispatched'],
          to: i % 97 === 0 ? 'unknown' : 'completed',
          token: input.claimToken,
          holder: null,
          outcome: { result: { content: [{ type: 'text', text: `ok ${i}` }] } },
          events: [
            {
              kind: 'outcome',
              executionId: input.id,
              detail: { state: i % 97 === 0 ? 'unknown' : 'completed' },
            },
          ],
        });
      }),
    );
  }
}

async function paint(page: Page, url: string): Promise<{ fcp: number; response: number }> {
  const times: { fcp: number; response: number }[] = [];
  for (let i = 0; i < RUNS; i++) {
    await page.goto(url, { waitUntil: 'load' });
    times.push(
      (await page.evaluate(
        // The paint may come after 'load': wait for its entry.
        `new Promise((resolve) => {
          const done = (fcp) => resolve({ fcp, response: performance.getEntriesByType('navigation')[0].responseEnd });
          new PerformanceObserver((list) => {
            const entry = list.getEntriesByName('first-contentful-paint')[0];
            if (entry) done(entry.startTime);
          }).observe({ type: 'paint', buffered: true });
        })`,
      )) as { fcp: number; response: number },
    );
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  return { fcp: median(times.map((t) => t.fcp)), response: median(times.map((t) => t.response)) };
}

const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
try {
  for (const n of sizes.length ? sizes : [10_000, 100_000]) {
    const work = mkdtempSync(join(tmpdir(), 'idem-first-paint-'));
    const store = await SqliteStore.open({ path: join(work, 'idem.db'), synchronous: 'normal' });
    try {
      const filled = performance.now();
      await fill(store, n);
      const fillSeconds = (performance.now() - filled) / 1000;
      const running = await startConsole({
        store,
        token: TOKEN,
        port: 0,
        verifyJournal: async () => {
          throw new Error('not measured');
        },
      });
      const base = running.url.replace(/\/$/, '');
      const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
      await page.goto(`${base}/login`);
      await page.fill('#operator', 'bench');
      await page.fill('#token', TOKEN);
      await page.click('#login button[type=submit]');
      await page.waitForURL(`${base}/executions`);
      const rows = await page.locator('#executions tbody tr').count();
      const older = await page.locator('#older').getAttribute('href');
      const list = await paint(page, `${base}/executions`);
      const search = await paint(page, `${base}/executions?q=no-such-text`);
      const byRequest = await paint(page, `${base}/executions?q=ORD-${Math.floor(n / 2)}`);
      const deep = await paint(page, `${base}${older}`);
      const fmt = (t: { fcp: number; response: number }) =>
        `FCP ${t.fcp.toFixed(0)} ms (HTML done ${t.response.toFixed(0)} ms)`;
      console.log(
        `${n.toLocaleString('en')} executions (filled in ${fillSeconds.toFixed(1)} s), ${rows} rows shown:\n` +
          `  list            ${fmt(list)}\n  search, no hit  ${fmt(search)}\n  search, args    ${fmt(byRequest)}\n  older page      ${fmt(deep)}`,
      );
      await page.close();
      await running.close();
    } finally {
      await store.close();
      rmSync(work, { recursive: true, force: true });
    }
  }
} finally {
  await browser.close();
}
