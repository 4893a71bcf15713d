import { describe, expect, it } from 'vitest';
import { GatewayConfigSchema } from '../config/config.js';
import {
  configKeyMatcher,
  type NamedTool,
  ToolNameGuard,
  toolNameEntries,
  toolNameProblems,
} from './tool-names.js';

const tool = (upstream: string, upstreamName: string, prefixed = true): NamedTool => ({
  name: prefixed ? `${upstream}__${upstreamName}` : upstreamName,
  upstream,
  upstreamName,
});

const config = (extra: Record<string, unknown>) =>
  GatewayConfigSchema.parse({ upstreams: { pay: { command: 'x' }, files: { command: 'y' } }, ...extra });

const oauth = (toolScopes: Record<string, string[]>) => ({
  auth: { oauth: { issuers: [{ issuer: 'https://as.example' }], tool_scopes: toolScopes } },
});

describe('tool names in the config', () => {
  const published = [tool('pay', 'charge_card'), tool('files', 'read'), tool('files', 'charge_status')];
  const both = { all: ['pay', 'files'], unlisted: [] };

  it('a key names a tool as published, as upstream__tool, or by its bare name while only one upstream has it', () => {
    const entries = toolNameEntries(
      config({ ...oauth({ charge_card: ['pay:write'] }), tools: { pay__charge_card: { replay: 'keyed' } } }),
    );
    expect(toolNameProblems(entries, published, both, '__')).toEqual([]);
    // One upstream: names are not prefixed, and the qualified form still names the tool.
    const single = [tool('pay', 'charge_card', false)];
    expect(
      toolNameProblems(entries, single, { all: ['pay'], unlisted: [] }, '__').map((p) => p.text),
    ).toEqual([]);
  });

  it('a key naming nothing says so, with the nearest published name; a scope or an approval is security', () => {
    const entries = toolNameEntries(
      config({
        ...oauth({ chrage_card: ['pay:write'] }),
        tools: {
          refund: { replay: 'keyed', approval: 'every_call' },
          pay__charge_card: { replay: 'keyed', status_probe: { tool: 'charge_stat' } },
        },
      }),
    );
    const problems = toolNameProblems(entries, published, both, '__');
    expect(problems.map((p) => [p.entry.where, p.entry.security])).toEqual([
      ['auth.oauth.tool_scopes.chrage_card', true],
      ['tools.refund', true],
      ['tools.pay__charge_card.status_probe.tool', false],
    ]);
    expect(problems[0]?.text).toContain(
      'auth.oauth.tool_scopes.chrage_card: no published tool is named "chrage_card"',
    );
    expect(problems[0]?.text).toContain('did you mean pay__charge_card?');
    expect(problems[1]?.text).toContain('Published: pay__charge_card, files__read, files__charge_status');
    expect(problems[2]?.text).toContain('did you mean files__charge_status?');
  });

  it('a bare name two upstreams publish is ambiguous; two contracts for one tool conflict', () => {
    const entries = toolNameEntries(
      config({
        tools: {
          read: { replay: 'read_only' },
          charge_card: { replay: 'keyed' },
          pay__charge_card: { replay: 'keyed' },
        },
      }),
    );
    const texts = toolNameProblems(entries, [...published, tool('pay', 'read')], both, '__').map(
      (p) => p.text,
    );
    expect(texts).toEqual([
      'tools.read: "read" names 2 published tools (files__read, pay__read); write the one you mean as it is published.',
      'tools.pay__charge_card: tools.charge_card names the same tool (pay__charge_card); keep one of them.',
    ]);
  });

  it('an upstream not listed yet leaves undecided what it may still publish', () => {
    const entries = toolNameEntries(
      config({ tools: { deploy: { replay: 'keyed' }, pay__nope: { replay: 'keyed' } } }),
    );
    const payOnly = [tool('pay', 'charge_card')];
    // files is not listed: deploy may be one of its tools; pay__nope can only be pay's, and pay has none.
    expect(
      toolNameProblems(entries, payOnly, { all: ['pay', 'files'], unlisted: ['files'] }, '__').map(
        (p) => p.entry.key,
      ),
    ).toEqual(['pay__nope']);
  });

  it("the front's scopes follow the rule before anything is listed: a bare key covers every upstream's tool of that name", () => {
    const matches = configKeyMatcher(
      config({ http_tools: { refund: { description: 'r', method: 'POST', url: 'http://127.0.0.1:9/' } } }),
      '__',
    );
    expect(matches('charge_card', 'pay__charge_card')).toBe(true);
    expect(matches('charge_card', 'files__charge_card')).toBe(true);
    expect(matches('pay__charge_card', 'pay__charge_card')).toBe(true);
    expect(matches('pay__charge_card', 'files__charge_card')).toBe(false);
    expect(matches('refund', 'refund')).toBe(true);
    expect(matches('charge', 'pay__charge_card')).toBe(false);
    const single = configKeyMatcher(
      GatewayConfigSchema.parse({ upstreams: { pay: { command: 'x' } } }),
      '__',
    );
    expect(single('pay__charge_card', 'charge_card')).toBe(true);
    expect(single('charge_card', 'charge_card')).toBe(true);
  });

  it('the guard stops on a scope or an approval at any listing, on anything else at start-up only, and says each once', () => {
    const told: string[] = [];
    const faults: string[] = [];
    const guard = new ToolNameGuard(config({ tools: { cuont: { replay: 'keyed' } } }), {
      warn: (m) => told.push(m),
      fault: (e) => faults.push(e.message),
    });
    const catalog = (tools: NamedTool[], listed: string[]) => ({
      entries: () => tools,
      listedUpstreams: () => listed,
    });
    guard.listed('pay', catalog([tool('pay', 'count')], ['pay']));
    expect(guard.fault).toBeUndefined();
    guard.listed('files', catalog([tool('pay', 'count'), tool('files', 'read')], ['pay', 'files']));
    expect(faults).toHaveLength(1);
    expect(guard.fault?.message).toContain('so the gateway runs no tool until that is fixed');
    expect(guard.fault?.message).toContain('tools.cuont: no published tool is named "cuont"');

    const later = new ToolNameGuard(config({ tools: { pay__count: { replay: 'keyed' } } }), {
      warn: (m) => told.push(m),
      fault: (e) => faults.push(e.message),
    });
    later.listed('pay', catalog([tool('pay', 'count')], ['pay', 'files']));
    later.listed('pay', catalog([tool('pay', 'count_v2')], ['pay', 'files']));
    later.listed('pay', catalog([tool('pay', 'count_v2')], ['pay', 'files']));
    expect(later.fault).toBeUndefined();
    expect(told).toEqual([
      expect.stringContaining('tools.pay__count: no published tool is named "pay__count"'),
    ]);

    const scoped = new ToolNameGuard(config(oauth({ pay__count: ['pay:write'] })), {
      warn: (m) => told.push(m),
      fault: (e) => faults.push(e.message),
    });
    scoped.listed('pay', catalog([tool('pay', 'count')], ['pay', 'files']));
    scoped.listed('pay', catalog([tool('pay', 'count_v2')], ['pay', 'files']));
    expect(scoped.fault?.message).toContain('auth.oauth.tool_scopes.pay__count');
  });
});
