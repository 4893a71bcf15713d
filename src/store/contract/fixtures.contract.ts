/** The values the store contract's feature files share: ids, waits, an outcome that must survive exactly. */
import { randomBytes } from 'node:crypto';
import { monotonicFactory } from 'ulid';
import { taskCreatedEvent } from '../../journal/task-events.js';
import type { StoredOutcome } from '../outcome.js';
import type { ExecutionRecord, OpenTaskInput, UpstreamTaskHandle } from '../types.js';

export const LONG_MS = 10 * 60_000;
/** A lease meant to run out during the test, and how long to wait for it to. */
export const SHORT_LEASE_MS = 60;
export const PAST_SHORT_LEASE_MS = 150;

const nextUlid = monotonicFactory();
export const newId = (): string => `exe_${nextUlid()}`;
export const newToken = (): string => `tok_${randomBytes(18).toString('base64url')}`;
export const newTaskId = (): string => `tsk_${randomBytes(32).toString('base64url')}`;

/** Everything a caller can observe of a record, minus the moment it was read. */
export function stable(record: ExecutionRecord | undefined): Omit<ExecutionRecord, 'readAt'> | undefined {
  if (record === undefined) return undefined;
  const { readAt: _readAt, ...rest } = record;
  return rest;
}

/** A result that survives only an exact round trip: deep nesting, awkward strings and numbers. */
export const AWKWARD_OUTCOME: StoredOutcome = {
  result: {
    content: [
      {
        type: 'text',
        text: 'Charged €12,00 — ✓ 東京 🧾 e\u0301 \u202Eevil\u202C line\u2028sep "quoted" \\ back\nnew',
      },
      { type: 'text', text: 'nul \u0000 and lone \ud800 surrogate' },
    ],
    structuredContent: {
      id: 'ch_3Nx',
      amounts: [0, -1, 1.5, 0.1, 1e-7, 1e21, 2 ** 53 - 1, -(2 ** 53 - 1), 123456789.125],
      nested: [[[]], [[1, [2, [3, { deep: [true, false, null] }]]]], {}],
      flags: { ok: true, none: null, empty: '' },
      'clé 🔑': 'valeur',
    },
    isError: false,
  },
};

/** A client's task on an execution, as the engine opens one. */
export const taskInput = (executionId: string, overrides: Partial<OpenTaskInput> = {}): OpenTaskInput => ({
  taskId: newTaskId(),
  executionId,
  actor: 'user:alice',
  generation: 'v2',
  ttlMs: 48 * 3_600_000,
  pollIntervalMs: 1_000,
  ...overrides,
});

/** Who and what a task's journal event is about. */
export const subject = (record: ExecutionRecord, actor = record.actor) => ({
  executionId: record.id,
  actor,
  tool: record.tool,
});

/** The events of a task opened on `record`. */
export const created = (record: ExecutionRecord, input: OpenTaskInput) => [
  taskCreatedEvent(subject(record, input.actor), input),
];

/** An upstream's task, as the holder of a dispatch records it. */
export const HANDLE: UpstreamTaskHandle = {
  generation: 'v1',
  upstream: 'research',
  taskId: 'a1b2c3d4-upstream',
  pollIntervalMs: 250,
  createdAt: 1_764_000_000_000,
};

/** What a task's target asks for, in the task-input tests. */
export const ASKED = {
  confirm: { method: 'elicitation/create', params: { message: 'Deploy "r-7" — 東京 🧾?' } },
  region: { method: 'elicitation/create' },
};
