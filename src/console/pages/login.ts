import { html } from 'hono/html';
import type { Html } from '../layout.js';

export function loginPage(error?: string): Html {
  return html`<form method="post" action="/login" class="login" id="login">
  <h1>Idem console</h1>
  ${error ? html`<div class="notice error" role="alert">${error}</div>` : ''}
  <label for="operator">Your name (decisions are journaled under it)</label>
  <input id="operator" name="operator" autocomplete="username" required maxlength="64" pattern="[A-Za-z0-9._@\\-]+">
  <label for="token">Operator token</label>
  <input id="token" name="token" type="password" autocomplete="current-password" required>
  <p><button type="submit">Log in</button></p>
</form>`;
}
