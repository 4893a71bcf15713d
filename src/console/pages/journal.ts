import { html } from 'hono/html';
import { JOURNAL_STREAMS } from '../../journal/events.js';
import type { StoreVerifyReport } from '../../journal/verify-store.js';
import type { Html } from '../layout.js';

/**
 * The journals' health: each stream verified as `idem audit verify` does
 * (the same function, given by whoever started the console), and its last
 * signed head. Verified on each visit — not live: a big journal takes a while.
 */
export async function journalPage(verify: () => Promise<StoreVerifyReport>): Promise<Html> {
  let report: StoreVerifyReport;
  try {
    report = await verify();
  } catch (error) {
    return html`<h1>Journal</h1><div class="notice error">Could not verify: ${error instanceof Error ? error.message : String(error)}</div>`;
  }
  const bad = report.firstBad;
  return html`<h1>Journal</h1>
<p id="verdict" class="${report.ok ? 'ok' : 'bad'}">${
    report.ok
      ? 'Intact: every chain verifies, and the executions table matches the journal.'
      : `TAMPERED: ${bad?.executionId ? `execution ${bad.executionId}` : `seq ${bad?.seq} of the ${bad?.stream ?? 'activity'} journal`} (${bad?.problem}): ${bad?.message}`
  }</p>
<table id="streams">
<thead><tr><th>Stream</th><th>Status</th><th>Entries</th><th>Last seq</th><th>Head hash</th><th>Last signed head</th></tr></thead>
<tbody>${JOURNAL_STREAMS.map((stream) => {
    const r = report.streams[stream];
    if (!r) return '';
    const signed = r.signedHead
      ? `seq ${r.signedHead.seq}, ${r.signedHead.verified ? 'signature verified' : 'signature NOT checked (no public key)'}${r.lastSeq > r.signedHead.seq ? `; seq ${r.signedHead.seq + 1}–${r.lastSeq} protected by the chain only` : ''}`
      : 'none yet';
    return html`<tr data-stream="${stream}"><td>${stream}</td><td class="${r.ok ? 'ok' : 'bad'}">${r.ok ? 'verified' : 'TAMPERED'}</td><td>${r.entries}</td><td>${r.lastSeq}</td><td class="mono">${r.headHash}</td><td>${signed}</td></tr>`;
  })}</tbody>
</table>
${
  report.executions
    ? html`<p>${report.executions.checked} executions match the journal (${report.executions.outcomesChecked} outcomes by digest; ${report.executions.trimmed} finished ones trimmed by retention).</p>`
    : ''
}`;
}
