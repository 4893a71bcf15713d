/**
 * The script of the copy buttons (/static/copy.js): a click on
 * `button.copy[data-copy]` puts its value on the clipboard and says so on the
 * button. One listener on the document, so buttons a live refresh brings in
 * work too. Where the Clipboard API is refused, a selected hidden text and
 * the copy command do it. The button gives its focus back: a focused control
 * in <main> would hold the live refresh (live-script.ts) until a click elsewhere.
 */
export const COPY_SCRIPT = `
(() => {
  const fallback = (text) => {
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.append(area);
    area.select();
    const done = document.execCommand('copy');
    area.remove();
    return done ? Promise.resolve() : Promise.reject(new Error('copy refused'));
  };
  document.addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest('button.copy[data-copy]') : null;
    if (!button) return;
    const text = button.dataset.copy;
    const copied = navigator.clipboard && window.isSecureContext
      ? navigator.clipboard.writeText(text).catch(() => fallback(text))
      : fallback(text);
    copied.then(
      () => { button.textContent = 'copied'; button.dataset.copied = 'true'; },
      () => { button.textContent = 'select it'; },
    ).finally(() => {
      button.blur();
      setTimeout(() => { button.textContent = 'copy'; delete button.dataset.copied; }, 1500);
    });
  });
})();
`;
