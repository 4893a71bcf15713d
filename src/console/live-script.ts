/**
 * The script every live page loads (/static/live.js). Every few seconds it
 * fetches the page again and brings in what changed — unless the operator is
 * busy with a form (focus, or a value changed and not sent), which a refresh
 * must never throw away.
 *
 * Two ways, chosen by the page:
 * - by default the main part is replaced (Executions, Sessions, Activity);
 * - `data-stable-rows` (Approvals): rows never move under the pointer. A row
 *   already on screen stays where it is; when its request stops being pending
 *   it says so and its buttons are disabled. New requests are not inserted:
 *   the reserved line `[data-news]` counts them, with a link that reloads.
 *   Otherwise a pointer resting on a button would land on a newer request
 *   after a refresh, and the click would decide a request nobody read.
 *
 * When the refresh is sent to the login page (the session ended: logged out,
 * expired, the console restarted), the page says that what it shows is no
 * longer live, disables its buttons and stops refreshing. When the console
 * does not answer, it says the page may be out of date and keeps trying.
 * Both notices are fixed bars over the header, so nothing moves.
 *
 * The live mark in the header (layout.ts) says which of these holds — live,
 * paused, out of date, ended — and when the page was last brought up to date
 * (the console's time, read from the refreshed page). Its Pause button stops
 * the refreshes until Resume (which refreshes at once); the choice holds for
 * the browser tab's session, across pages, so a paused page stays paused when
 * the operator opens another to compare.
 *
 * `main[data-refreshes]` counts the refreshes applied, `main[data-paused-ticks]`
 * the ones a pause skipped (tests wait on them).
 */
export const LIVE_SCRIPT = `
(() => {
  const main = document.querySelector('main[data-live]');
  if (!main) return;
  const every = Number(main.dataset.live) || 5000;
  const fields = () => JSON.stringify([...main.querySelectorAll('input, textarea, select')].map(
    (e) => (e.type === 'radio' || e.type === 'checkbox' ? e.checked : e.value)));
  let rendered = fields();
  let refreshes = 0;
  const mark = document.getElementById('live-mark');
  const pause = document.getElementById('live-pause');
  let paused = sessionStorage.getItem('idem-live-paused') === '1';
  const say = (state, label) => {
    if (!mark) return;
    mark.dataset.state = state;
    const text = document.getElementById('live-state');
    if (text) text.textContent = label;
  };
  const showPause = () => {
    if (!pause) return;
    pause.textContent = paused ? 'Resume' : 'Pause';
    pause.setAttribute('aria-pressed', String(paused));
    if (paused) say('paused', 'Paused');
    else if (mark && mark.dataset.state === 'paused') say('live', 'Live');
  };
  showPause();
  const busy = () => (main.contains(document.activeElement) && document.activeElement !== main)
    || fields() !== rendered;

  const bar = (kind, text, link) => {
    let element = document.getElementById('live-notice');
    if (!text) { element?.remove(); return; }
    if (!element) {
      element = document.createElement('div');
      element.id = 'live-notice';
      document.body.append(element);
    }
    element.className = 'live-notice ' + kind;
    element.setAttribute('role', 'alert');
    element.textContent = text + ' ';
    if (link) {
      const a = document.createElement('a');
      a.href = link.href;
      a.textContent = link.text;
      element.append(a);
    }
  };

  const disable = (root) => {
    for (const control of root.querySelectorAll('button, input, textarea, select')) control.disabled = true;
  };

  const mergeRows = (next) => {
    const table = main.querySelector('table[data-rows]');
    const fresh = next.querySelector('table[data-rows]');
    if (!table || !fresh) return;
    const incoming = new Map([...fresh.querySelectorAll('tr[data-ref]')].map((row) => [row.dataset.ref, row]));
    const shown = new Set();
    for (const row of table.querySelectorAll('tr[data-ref]')) {
      shown.add(row.dataset.ref);
      if (row.dataset.state !== 'pending') continue;
      const now = incoming.get(row.dataset.ref);
      if (now && now.dataset.state === 'pending') continue;
      row.dataset.state = now ? now.dataset.state : 'gone';
      disable(row);
      const status = row.querySelector('[data-cell=status]');
      if (status) {
        const fromNow = now && now.querySelector('[data-cell=status]');
        if (fromNow) status.innerHTML = fromNow.innerHTML;
        else status.textContent = 'no longer pending: decided or expired elsewhere (reload to see)';
      }
    }
    const added = [...incoming.keys()].filter((ref) => !shown.has(ref)).length;
    const news = main.querySelector('[data-news]');
    if (!news) return;
    news.dataset.news = String(added);
    news.textContent = '';
    if (added > 0) {
      news.append(added + (added === 1 ? ' new request' : ' new requests') + ' since this page was loaded (not shown, so that nothing moves under your pointer). ');
      const a = document.createElement('a');
      a.href = location.href;
      a.textContent = 'Show them';
      news.append(a);
    }
  };

  let pausedTicks = 0;
  const refresh = async () => {
    if (paused) main.dataset.pausedTicks = String(++pausedTicks);
    if (paused || busy() || document.hidden) return;
    const response = await fetch(location.href, { credentials: 'same-origin' }).catch(() => undefined);
    if (response && (response.status === 401 || (response.redirected && new URL(response.url).pathname === '/login'))) {
      clearInterval(timer);
      main.dataset.liveState = 'ended';
      say('ended', 'Not live');
      if (pause) pause.disabled = true;
      disable(main);
      bar('ended', 'Your console session has ended: what you see is no longer live, and nothing here can be decided.',
        { href: '/login', text: 'Log in again' });
      return;
    }
    if (!response || !response.ok) {
      main.dataset.liveState = 'unreachable';
      say('stale', 'Out of date');
      bar('stale', 'The console did not answer at ' + new Date().toLocaleTimeString() + ': what you see may be out of date. Trying again.');
      return;
    }
    const fetched = new DOMParser().parseFromString(await response.text(), 'text/html');
    const next = fetched.querySelector('main');
    if (!next || busy() || paused) return;
    if (main.hasAttribute('data-stable-rows')) mergeRows(next);
    else main.innerHTML = next.innerHTML;
    rendered = fields();
    main.dataset.liveState = 'live';
    bar();
    say('live', 'Live');
    const updated = document.getElementById('live-updated');
    const at = fetched.getElementById('live-updated');
    if (updated && at) {
      updated.textContent = at.textContent;
      updated.setAttribute('datetime', at.getAttribute('datetime') || '');
    }
    main.dataset.refreshes = String(++refreshes);
  };
  const timer = setInterval(refresh, every);
  pause?.addEventListener('click', () => {
    paused = !paused;
    sessionStorage.setItem('idem-live-paused', paused ? '1' : '0');
    showPause();
    if (!paused) refresh();
  });
})();
`;
