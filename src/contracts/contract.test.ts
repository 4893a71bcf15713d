import { describe, expect, it } from 'vitest';
import { CONTRACT_DEFAULTS as DEFAULTS } from '../defaults.js';
import { resolveContract, type StatusProbe, type ToolContract, ToolContractSchema } from './contract.js';
import { durationMs } from './duration.js';

describe('resolveContract: no contract declared', () => {
  it('takes readOnlyHint tools as read_only', () => {
    const resolved = resolveContract(undefined, { readOnlyHint: true });
    expect(resolved.replay).toBe('read_only');
    expect(resolved.defaulted).toBe(true);
  });

  it('takes everything else as review, scoped to the actor, with a 15-minute window', () => {
    for (const annotations of [
      undefined,
      {},
      { readOnlyHint: false },
      { idempotentHint: true },
      { destructiveHint: false, idempotentHint: true },
    ]) {
      expect(resolveContract(undefined, annotations)).toEqual({
        replay: 'review',
        scope: { kind: 'actor' },
        attachWindowMs: 15 * 60_000,
        afterCompletion: 'new_if_moved_on',
        afterFailure: 'new',
        argumentRules: { ignore: [], secrets: [], defaults: {} },
        timeoutMs: DEFAULTS.timeoutMs,
        leaseMs: DEFAULTS.leaseMs,
        approval: 'none',
        approvalTimeoutMs: 15 * 60_000,
        allowActors: [],
        elicitation: 'allow',
        statusProbe: undefined,
        task: 'off',
        taskAfterMs: DEFAULTS.taskAfterMs,
        defaulted: true,
      });
    }
    expect(DEFAULTS.attachWindowMs).toBe(15 * 60_000);
  });

  it('still adds secrets found in the schema', () => {
    expect(resolveContract(undefined, undefined, ['password', 'card.number']).argumentRules.secrets).toEqual([
      'password',
      'card.number',
    ]);
  });
});

describe('resolveContract: declared contracts', () => {
  it('wins over annotations and is not marked defaulted', () => {
    const resolved = resolveContract({ replay: 'keyed' }, { readOnlyHint: true });
    expect(resolved.replay).toBe('keyed');
    expect(resolved.defaulted).toBe(false);
    expect(resolved.scope).toEqual({ kind: 'actor' });
    expect(resolved.attachWindowMs).toBe(DEFAULTS.attachWindowMs);
    expect(resolveContract({ replay: 'review' }, { readOnlyHint: true }).replay).toBe('review');
    expect(resolveContract({ replay: 'read_only' }, undefined).replay).toBe('read_only');
    expect(resolveContract({ replay: 'status' }, undefined).replay).toBe('status');
  });

  it('after_completion: new_if_moved_on unless a business key or a window names the action; after_failure: new', () => {
    const of = (contract: Parameters<typeof resolveContract>[0]) => resolveContract(contract, undefined);
    expect(of({ replay: 'keyed' }).afterCompletion).toBe('new_if_moved_on');
    expect(of({ replay: 'keyed', scope: 'session' }).afterCompletion).toBe('new_if_moved_on');
    expect(of({ replay: 'keyed', scope: { business_key: 'order_id' } }).afterCompletion).toBe('replay');
    expect(of({ replay: 'review', scope: { window: '5m' } }).afterCompletion).toBe('replay');
    expect(of({ replay: 'review', scope: { window: '5m' }, after_completion: 'new' }).afterCompletion).toBe(
      'new',
    );
    expect(of({ replay: 'review', after_completion: 'replay' }).afterCompletion).toBe('replay');
    expect(of({ replay: 'review' }).afterFailure).toBe('new');
    expect(of({ replay: 'review', after_failure: 'replay' }).afterFailure).toBe('replay');
    expect(() => of({ replay: 'review', after_failure: 'retry' as never })).toThrow();
  });

  it('resolves each scope', () => {
    expect(resolveContract({ replay: 'keyed', scope: 'session' }, undefined).scope).toEqual({
      kind: 'session',
    });
    expect(resolveContract({ replay: 'keyed', scope: 'actor' }, undefined).scope).toEqual({ kind: 'actor' });
    expect(
      resolveContract({ replay: 'keyed', scope: { business_key: 'order.id' } }, undefined).scope,
    ).toEqual({
      kind: 'business_key',
      path: 'order.id',
      // Per actor unless the contract says the key is shared.
      shared: false,
    });
    expect(
      resolveContract({ replay: 'keyed', scope: { business_key: 'order_id', shared: true } }, undefined)
        .scope,
    ).toEqual({ kind: 'business_key', path: 'order_id', shared: true });
    const windowed = resolveContract({ replay: 'review', scope: { window: '5m' } }, undefined);
    expect(windowed.scope).toEqual({ kind: 'window', ms: 5 * 60_000 });
    // The attach window follows the scope's window unless given.
    expect(windowed.attachWindowMs).toBe(5 * 60_000);
    const both = resolveContract(
      { replay: 'review', scope: { window: 60_000 }, attach_window: '2m' },
      undefined,
    );
    expect(both.scope).toEqual({ kind: 'window', ms: 60_000 });
    expect(both.attachWindowMs).toBe(120_000);
  });

  it('reads durations as strings or milliseconds', () => {
    const resolved = resolveContract(
      { replay: 'keyed', attach_window: '30s', timeout: '15m', lease: 1234 },
      undefined,
    );
    expect(resolved.attachWindowMs).toBe(30_000);
    expect(resolved.timeoutMs).toBe(15 * 60_000);
    expect(resolved.leaseMs).toBe(1234);
    expect(resolveContract({ replay: 'keyed', timeout: '2h', lease: '500ms' }, undefined)).toMatchObject({
      timeoutMs: 2 * 3_600_000,
      leaseMs: 500,
    });
    expect(resolveContract({ replay: 'keyed', attach_window: 0 }, undefined).attachWindowMs).toBe(0);
    expect(durationMs('48h', 'x')).toBe(48 * 3_600_000);
    expect(durationMs('100', 'x')).toBe(100);
    expect(durationMs(0, 'x')).toBe(0);
  });

  it('fills in every other field', () => {
    const probe: StatusProbe = async () => ({ outcome: 'unknown' });
    const resolved = resolveContract(
      {
        replay: 'status',
        after_completion: 'new',
        approval: 'every_call',
        status_probe: probe,
        fingerprint: {
          ignore: ['trace_id'],
          secrets: ['password', 'token'],
          defaults: { currency: 'EUR', options: { dry_run: false } },
        },
      },
      undefined,
      ['token', 'api_key'],
    );
    expect(resolved.afterCompletion).toBe('new');
    expect(resolved.approval).toBe('every_call');
    expect(resolved.statusProbe).toBe(probe);
    expect(resolved.argumentRules).toEqual({
      ignore: ['trace_id'],
      // Declared and schema-found secrets, each once.
      secrets: ['password', 'token', 'api_key'],
      defaults: { currency: 'EUR', options: { dry_run: false } },
    });
  });
});

describe('resolveContract: invalid contracts are refused', () => {
  const refused = (contract: unknown, message?: RegExp) => {
    expect(() => resolveContract(contract as ToolContract, undefined)).toThrow(message);
  };

  it('refuses unknown fields, at every level', () => {
    refused({ replay: 'keyed', retries: 3 });
    refused({ replay: 'keyed', fingerprint: { ignored: ['x'] } });
    refused({ replay: 'keyed', scope: { business_key: 'id', window: '5m' } });
    refused({ replay: 'keyed', scope: { tenant: 'x' } });
  });

  it('refuses a missing or unknown replay class', () => {
    refused({});
    refused({ replay: 'maybe' });
    refused({ replay: 'READ_ONLY' });
    refused({ replay: null });
  });

  it('refuses bad scopes and enums', () => {
    refused({ replay: 'keyed', scope: 'tenant' });
    refused({ replay: 'keyed', scope: { business_key: '' } });
    refused({ replay: 'keyed', scope: { business_key: 'id', shared: 'yes' } });
    refused({ replay: 'keyed', scope: { business_key: 'id', per: 'actor' } });
    // The key would be removed before it is read.
    refused(
      { replay: 'keyed', scope: { business_key: 'order_id' }, fingerprint: { ignore: ['order_id'] } },
      /business_key "order_id" is also in fingerprint.ignore/,
    );
    refused({ replay: 'keyed', scope: { window: 0 } }, /scope\.window/);
    refused({ replay: 'keyed', scope: { window: '0s' } }, /scope\.window/);
    refused({ replay: 'keyed', after_completion: 'sometimes' });
    refused({ replay: 'keyed', approval: 'always' });
    refused({ replay: 'keyed', status_probe: 'http://status' });
    refused({ replay: 'keyed', fingerprint: { ignore: [''] } });
    refused({ replay: 'keyed', fingerprint: { defaults: { f: () => 1 } } });
  });

  it('refuses bad durations, naming the field', () => {
    refused({ replay: 'keyed', timeout: 'soon' }, /timeout: "soon" is not a duration/);
    refused({ replay: 'keyed', lease: '-5s' }, /lease/);
    refused({ replay: 'keyed', attach_window: '' }, /attach_window/);
    refused({ replay: 'keyed', attach_window: '1e3' }, /attach_window/);
    refused({ replay: 'keyed', scope: { window: 'fortnightly' } }, /scope\.window/);
    refused({ replay: 'keyed', timeout: -1 });
    refused({ replay: 'keyed', timeout: Number.NaN });
    refused({ replay: 'keyed', lease: Number.POSITIVE_INFINITY });
    refused({ replay: 'keyed', timeout: true });
    expect(() => durationMs('', 'f')).toThrow(/^f: "" is not a duration/);
    expect(() => durationMs(Number.POSITIVE_INFINITY, 'f')).toThrow(/f:/);
    expect(() => durationMs(-1, 'f')).toThrow(/f:/);
  });

  it('accepts what the schema accepts and nothing looser', () => {
    expect(ToolContractSchema.safeParse({ replay: 'review', scope: { window: '1h' } }).success).toBe(true);
    expect(
      ToolContractSchema.safeParse({ replay: 'review', scope: { window: '1h' }, extra: 1 }).success,
    ).toBe(false);
  });
});

describe('resolveContract: task and task_after', () => {
  it('is off by default, and optional after 10 s for a tool its upstream can run as a task', () => {
    expect(resolveContract(undefined, undefined)).toMatchObject({ task: 'off' });
    expect(resolveContract({ replay: 'review' }, { taskSupport: 'forbidden' })).toMatchObject({
      task: 'off',
    });
    for (const taskSupport of ['optional', 'required'] as const)
      expect(resolveContract({ replay: 'review' }, { taskSupport })).toMatchObject({
        task: 'optional',
        taskAfterMs: DEFAULTS.taskAfterMs,
      });
    expect(DEFAULTS.taskAfterMs).toBe(10_000);
  });

  it('answers as a task at once under required, and after task_after when given', () => {
    expect(resolveContract({ replay: 'review', task: 'required' }, undefined)).toMatchObject({
      task: 'required',
      taskAfterMs: 0,
    });
    expect(resolveContract({ replay: 'keyed', task: 'optional', task_after: '0s' }, undefined)).toMatchObject(
      {
        task: 'optional',
        taskAfterMs: 0,
      },
    );
    expect(resolveContract({ replay: 'keyed', task: 'required', task_after: '5s' }, undefined)).toMatchObject(
      {
        taskAfterMs: 5_000,
      },
    );
    // What the config says wins over what the upstream lists.
    expect(resolveContract({ replay: 'review', task: 'off' }, { taskSupport: 'required' }).task).toBe('off');
  });

  it('refuses a task on a read-only tool, and a task_after past the timeout', () => {
    expect(() => resolveContract({ replay: 'read_only', task: 'optional' }, undefined)).toThrow(
      /task: optional needs a tool whose calls are recorded/,
    );
    expect(resolveContract({ replay: 'read_only', task: 'off' }, undefined).task).toBe('off');
    // A read-only tool listed with task support stays a pass-through: nothing to record.
    expect(resolveContract(undefined, { readOnlyHint: true, taskSupport: 'required' }).task).toBe('off');
    expect(() =>
      resolveContract({ replay: 'review', task: 'optional', task_after: '2m', timeout: '1m' }, undefined),
    ).toThrow(/task_after must not be longer than timeout \(2m > 1m\)/);
    expect(() => ToolContractSchema.parse({ replay: 'review', task: 'sometimes' })).toThrow();
  });
});
