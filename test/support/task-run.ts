import { randomBytes } from 'node:crypto';
import { taskCancelEvent, taskCreatedEvent, upstreamTaskEvent } from '../../src/journal/task-events.js';
import type { ExecutionStore, OpenTaskInput } from '../../src/store/types.js';
import { claimInput } from './claim-input.js';

/**
 * Executions with tasks journaled as the engine journals them, every task kind included: one
 * that followed an upstream's task to its outcome (a task for each of two actors, one cancelled
 * after dispatch), and one whose task was cancelled before dispatch and which was released as
 * not executed. Both finish, so a sweep with retention 0 trims them with their tasks.
 */
export async function journaledTaskRun(
  store: ExecutionStore,
): Promise<{ executions: string[]; tasks: string[] }> {
  const followed = claimInput({ state: 'dispatched', dispatchTimeoutMs: 60_000 });
  const subject = { executionId: followed.id, actor: followed.actor, tool: followed.tool };
  await store.claim(followed, {
    events: [
      { kind: 'accepted', ...subject, detail: { fingerprint: followed.fingerprint } },
      { kind: 'dispatched', ...subject },
    ],
  });
  const first = taskOn(followed.id, followed.actor);
  await store.openTask(first, [taskCreatedEvent(subject, first)]);
  const second = taskOn(followed.id, 'user:bob@example.com');
  await store.openTask(second, [taskCreatedEvent({ ...subject, actor: second.actor }, second)]);
  const handle = { generation: 'v2' as const, upstream: 'research', taskId: 'up-1', createdAt: Date.now() };
  await store.setUpstreamTask(followed.id, followed.claimToken, handle, [
    upstreamTaskEvent(subject, handle, 'working'),
  ]);
  await store.requestTaskCancel(second.taskId, [
    taskCancelEvent({ ...subject, actor: second.actor }, second.taskId, 'outcome'),
  ]);
  await store.transition({
    id: followed.id,
    from: ['dispatched'],
    to: 'completed',
    token: followed.claimToken,
    holder: null,
    outcome: { result: { content: [{ type: 'text', text: 'report' }] } },
    events: [{ kind: 'outcome', ...subject, detail: { state: 'completed' } }],
  });

  const released = claimInput();
  const releasedSubject = { executionId: released.id, actor: released.actor, tool: released.tool };
  await store.claim(released, {
    events: [{ kind: 'accepted', ...releasedSubject, detail: { fingerprint: released.fingerprint } }],
  });
  const third = taskOn(released.id, released.actor);
  await store.openTask(third, [taskCreatedEvent(releasedSubject, third)]);
  await store.requestTaskCancel(third.taskId, [taskCancelEvent(releasedSubject, third.taskId, 'dispatch')]);
  await store.transition({
    id: released.id,
    from: ['accepted'],
    to: 'failed',
    token: released.claimToken,
    holder: null,
    release: true,
    outcome: { result: { content: [{ type: 'text', text: 'not executed' }], isError: true } },
    events: [{ kind: 'outcome', ...releasedSubject, detail: { state: 'failed' } }],
  });
  return { executions: [followed.id, released.id], tasks: [first.taskId, second.taskId, third.taskId] };
}

function taskOn(executionId: string, actor: string): OpenTaskInput {
  return {
    taskId: `tsk_${randomBytes(32).toString('base64url')}`,
    executionId,
    actor,
    generation: 'v2',
    ttlMs: 48 * 3_600_000,
    pollIntervalMs: 1_000,
  };
}
