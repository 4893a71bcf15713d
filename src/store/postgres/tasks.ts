import type { ActivityEventInput } from '../../journal/events.js';
import {
  type TaskColumns,
  type TaskJoinColumns,
  type TaskWatchColumns,
  taskFromColumns,
  taskFromJoin,
  taskInputColumn,
  taskWatchFromColumns,
  upstreamTaskColumn,
} from '../sql-columns.js';
import { takeAnswers, taskWithoutExecution } from '../tasks.js';
import type {
  ExecutionRecord,
  OpenTaskInput,
  TaskInput,
  TaskInputRequest,
  TaskRecord,
  TaskWatch,
  UpstreamTaskHandle,
} from '../types.js';
import type { JournalChains } from './journal-chains.js';
import { type ExecutionRow, toRecord, wholeMs } from './sql.js';
import { TASK_SQL } from './task-sql.js';
import { type Connections, query } from './transactions.js';

// The writes and reads of tasks. Each write holds a journal chain while it has events
// (journal-chains.ts), which the database appends in the statement that makes the change,
// only if it made one.

export async function writeOpenTask(
  db: Connections,
  chains: JournalChains,
  input: OpenTaskInput,
  events: ActivityEventInput[] = [],
): Promise<TaskRecord> {
  return chains.withEvents(events, (journal) =>
    // The pair's row, read on the same connection when the insert found one there.
    db.connection(async (client) => {
      const [inserted] = (
        await query<TaskColumns>(TASK_SQL.open, [
          events.length > 0,
          input.ttlMs === null ? null : wholeMs(input.ttlMs),
          wholeMs(input.pollIntervalMs),
          input.taskId,
          input.executionId,
          input.actor,
          input.generation,
          ...journal,
        ])(client)
      ).rows;
      if (inserted) return taskFromColumns(inserted);
      const [existing] = (await query<TaskColumns>(TASK_SQL.find, [input.executionId, input.actor])(client))
        .rows;
      if (!existing) throw taskWithoutExecution(input.executionId);
      return taskFromColumns(existing);
    }),
  );
}

export async function writeTaskCancel(
  db: Connections,
  chains: JournalChains,
  taskId: string,
  events: ActivityEventInput[] = [],
): Promise<TaskRecord | undefined> {
  return chains.withEvents(events, (journal) =>
    db.connection(async (client) => {
      const [changed] = (
        await query<TaskColumns>(TASK_SQL.requestCancel, [events.length > 0, taskId, ...journal])(client)
      ).rows;
      if (changed) return taskFromColumns(changed);
      const [row] = (await query<TaskColumns>(TASK_SQL.get, [taskId])(client)).rows;
      return row && taskFromColumns(row);
    }),
  );
}

export async function writeUpstreamTask(
  db: Connections,
  chains: JournalChains,
  write: { id: string; token: string; handle: UpstreamTaskHandle; events?: ActivityEventInput[] },
): Promise<boolean> {
  const events = write.events ?? [];
  return chains.withEvents(events, (journal) =>
    db.use(async (client) => {
      const { rows } = await query(TASK_SQL.setUpstreamTask, [
        events.length > 0,
        write.id,
        write.token,
        upstreamTaskColumn.encode(write.handle),
        ...journal,
      ])(client);
      return rows.length === 1;
    }),
  );
}

export async function writeTaskInput(
  db: Connections,
  chains: JournalChains,
  write: {
    id: string;
    token: string;
    requests: Record<string, TaskInputRequest> | null;
    events?: ActivityEventInput[];
  },
): Promise<boolean> {
  const events = write.events ?? [];
  return chains.withEvents(events, (journal) =>
    db.use(async (client) => {
      const requests = write.requests === null ? null : JSON.stringify(write.requests);
      const { rows } = await query(TASK_SQL.setTaskInput, [
        events.length > 0,
        write.id,
        write.token,
        requests,
        ...journal,
      ])(client);
      return rows.length === 1;
    }),
  );
}

export async function addTaskInput(
  db: Connections,
  chains: JournalChains,
  write: {
    id: string;
    token: string;
    requests: Record<string, TaskInputRequest>;
    events?: ActivityEventInput[];
  },
): Promise<boolean> {
  const events = write.events ?? [];
  return chains.withEvents(events, (journal) =>
    db.use(async (client) => {
      const { rows } = await query(TASK_SQL.addTaskInput, [
        events.length > 0,
        write.id,
        write.token,
        JSON.stringify(write.requests),
        ...journal,
      ])(client);
      return rows.length === 1;
    }),
  );
}

/** Enough for any number of answers that race: each lost round means another answer landed. */
const ANSWER_ROUNDS = 16;

/**
 * Reads the input, takes the answers (takeAnswers, the rule every store applies) and writes it
 * back only if nobody changed it meanwhile; else reads again.
 */
export async function writeTaskAnswers(
  db: Connections,
  chains: JournalChains,
  answer: { id: string; answers: Record<string, unknown>; events?: ActivityEventInput[] },
): Promise<TaskInput | undefined> {
  for (let round = 0; round < ANSWER_ROUNDS; round++) {
    const row = await readWatch(db, answer.id);
    const open = row && taskWatchFromColumns(row).input;
    if (!row || !open) return undefined;
    const { input, taken } = takeAnswers(open, answer.answers);
    if (taken.length === 0) return input;
    const events = answer.events ?? [];
    const landed = await chains.withEvents(events, (journal) =>
      db.use(async (client) => {
        const { rows } = await query(TASK_SQL.answerTaskInput, [
          events.length > 0,
          answer.id,
          row.task_input,
          taskInputColumn.encode(input),
          ...journal,
        ])(client);
        return rows.length === 1;
      }),
    );
    if (landed) return input;
  }
  throw new Error(`the answers to ${answer.id}'s input lost ${ANSWER_ROUNDS} rounds to other answers`);
}

export async function watchTask(db: Connections, id: string): Promise<TaskWatch | undefined> {
  const row = await readWatch(db, id);
  return row && taskWatchFromColumns(row);
}

async function readWatch(db: Connections, id: string): Promise<TaskWatchColumns | undefined> {
  return db.use(async (client) => (await query<TaskWatchColumns>(TASK_SQL.watch, [id])(client)).rows[0]);
}

export async function readTask(
  db: Connections,
  taskId: string,
): Promise<{ task: TaskRecord; record: ExecutionRecord } | undefined> {
  return db.use(async (client) => {
    const [row] = (await query<ExecutionRow & TaskJoinColumns>(TASK_SQL.getWithExecution, [taskId])(client))
      .rows;
    return row && { task: taskFromJoin(row), record: toRecord(row) };
  });
}

export async function findTask(
  db: Connections,
  executionId: string,
  actor: string,
): Promise<TaskRecord | undefined> {
  return db.use(async (client) => {
    const [row] = (await query<TaskColumns>(TASK_SQL.find, [executionId, actor])(client)).rows;
    return row && taskFromColumns(row);
  });
}

export async function listTasks(
  db: Connections,
  actor: string,
  page: { after?: string; limit: number },
): Promise<TaskRecord[]> {
  return db.use(async (client) =>
    (await query<TaskColumns>(TASK_SQL.list, [actor, page.after ?? null, page.limit])(client)).rows.map(
      taskFromColumns,
    ),
  );
}
