import type Database from 'better-sqlite3';
import type { ActivityEventInput } from '../../journal/events.js';
import {
  taskFromColumns,
  taskFromJoin,
  taskInputColumn,
  taskWatchFromColumns,
  upstreamTaskColumn,
} from '../sql-columns.js';
import { addedRequests, takeAnswers, taskWithoutExecution } from '../tasks.js';
import type {
  ExecutionRecord,
  OpenTaskInput,
  TaskInput,
  TaskInputRequest,
  TaskRecord,
  TaskWatch,
  UpstreamTaskHandle,
} from '../types.js';
import { appendJournal } from './journal-append.js';
import { type Statements, toRecord, wholeMs } from './sql.js';
import type { TaskStatements } from './task-sql.js';

// The writes of tasks, each the body of one IMMEDIATE transaction that sqlite-store.ts runs
// through group commit (`now` read inside it), and their reads. Events are appended only
// when the write changed something.

/** The task writes as transactions, for group commit to run. */
export interface TaskTransactions {
  open: Database.Transaction<(input: OpenTaskInput, events?: ActivityEventInput[]) => TaskRecord>;
  requestCancel: Database.Transaction<
    (taskId: string, events?: ActivityEventInput[]) => TaskRecord | undefined
  >;
  setUpstreamTask: Database.Transaction<(write: UpstreamTaskWrite) => boolean>;
  setTaskInput: Database.Transaction<(write: TaskInputWrite) => boolean>;
  addTaskInput: Database.Transaction<(write: TaskInputAddition) => boolean>;
  answerTaskInput: Database.Transaction<(answer: TaskInputAnswer) => TaskInput | undefined>;
}

export interface TaskInputWrite {
  id: string;
  token: string;
  requests: Record<string, TaskInputRequest> | null;
  events: ActivityEventInput[] | undefined;
}

export interface TaskInputAddition {
  id: string;
  token: string;
  requests: Record<string, TaskInputRequest>;
  events: ActivityEventInput[] | undefined;
}

export interface TaskInputAnswer {
  id: string;
  answers: Record<string, unknown>;
  events: ActivityEventInput[] | undefined;
}

export function taskTransactions(
  db: Database.Database,
  sql: Statements,
  taskSql: TaskStatements,
  clock: () => number,
): TaskTransactions {
  return {
    open: db.transaction((input: OpenTaskInput, events?: ActivityEventInput[]) =>
      writeOpenTask(sql, taskSql, clock(), input, events),
    ),
    requestCancel: db.transaction((taskId: string, events?: ActivityEventInput[]) =>
      writeTaskCancel(sql, taskSql, clock(), taskId, events),
    ),
    setUpstreamTask: db.transaction((write: UpstreamTaskWrite) =>
      writeUpstreamTask(sql, taskSql, clock(), write),
    ),
    setTaskInput: db.transaction((write: TaskInputWrite) => writeTaskInput(sql, taskSql, clock(), write)),
    addTaskInput: db.transaction((write: TaskInputAddition) => addTaskInput(sql, taskSql, clock(), write)),
    answerTaskInput: db.transaction((answer: TaskInputAnswer) =>
      writeTaskAnswers(sql, taskSql, clock(), answer),
    ),
  };
}

export interface UpstreamTaskWrite {
  id: string;
  token: string;
  handle: UpstreamTaskHandle;
  events: ActivityEventInput[] | undefined;
}

function writeOpenTask(
  sql: Statements,
  taskSql: TaskStatements,
  now: number,
  input: OpenTaskInput,
  events: ActivityEventInput[] | undefined,
): TaskRecord {
  const inserted = taskSql.insert.run({
    taskId: input.taskId,
    executionId: input.executionId,
    actor: input.actor,
    generation: input.generation,
    now,
    ttlMs: input.ttlMs === null ? null : wholeMs(input.ttlMs),
    pollIntervalMs: wholeMs(input.pollIntervalMs),
  });
  const row = taskSql.find.get(input.executionId, input.actor);
  if (!row) throw taskWithoutExecution(input.executionId);
  if (inserted.changes === 1) appendJournal(sql, events, now);
  return taskFromColumns(row);
}

function writeTaskCancel(
  sql: Statements,
  taskSql: TaskStatements,
  now: number,
  taskId: string,
  events: ActivityEventInput[] | undefined,
): TaskRecord | undefined {
  if (taskSql.requestCancel.run({ taskId, now }).changes === 1) appendJournal(sql, events, now);
  const row = taskSql.get.get(taskId);
  return row && taskFromColumns(row);
}

function writeUpstreamTask(
  sql: Statements,
  taskSql: TaskStatements,
  now: number,
  write: UpstreamTaskWrite,
): boolean {
  const handle = upstreamTaskColumn.encode(write.handle);
  if (taskSql.setUpstreamTask.run({ id: write.id, token: write.token, handle, now }).changes === 0)
    return false;
  appendJournal(sql, write.events, now);
  return true;
}

function writeTaskInput(
  sql: Statements,
  taskSql: TaskStatements,
  now: number,
  write: TaskInputWrite,
): boolean {
  const input =
    write.requests === null
      ? null
      : taskInputColumn.encode({ requests: write.requests, answers: {}, askedAt: now });
  if (taskSql.setTaskInput.run({ id: write.id, token: write.token, input, now }).changes === 0) return false;
  appendJournal(sql, write.events, now);
  return true;
}

/** Read and written in one IMMEDIATE transaction: an answer taken meanwhile cannot be lost. */
function addTaskInput(
  sql: Statements,
  taskSql: TaskStatements,
  now: number,
  write: TaskInputAddition,
): boolean {
  const row = taskSql.watch.get(write.id);
  const open = row ? taskWatchFromColumns(row).input : null;
  const input = taskInputColumn.encode(addedRequests(open, write.requests, now));
  if (taskSql.setTaskInput.run({ id: write.id, token: write.token, input, now }).changes === 0) return false;
  appendJournal(sql, write.events, now);
  return true;
}

function writeTaskAnswers(
  sql: Statements,
  taskSql: TaskStatements,
  now: number,
  answer: TaskInputAnswer,
): TaskInput | undefined {
  const row = taskSql.watch.get(answer.id);
  const open = row && taskWatchFromColumns(row).input;
  if (!open) return undefined;
  const { input, taken } = takeAnswers(open, answer.answers);
  if (taken.length > 0) {
    taskSql.updateTaskInput.run({ id: answer.id, input: taskInputColumn.encode(input), now });
    appendJournal(sql, answer.events, now);
  }
  return input;
}

export function watchTask(taskSql: TaskStatements, id: string): TaskWatch | undefined {
  const row = taskSql.watch.get(id);
  return row && taskWatchFromColumns(row);
}

export function readTask(
  taskSql: TaskStatements,
  now: number,
  taskId: string,
): { task: TaskRecord; record: ExecutionRecord } | undefined {
  const row = taskSql.getWithExecution.get(taskId);
  return row && { task: taskFromJoin(row), record: toRecord(row, now) };
}

export function findTask(
  taskSql: TaskStatements,
  executionId: string,
  actor: string,
): TaskRecord | undefined {
  const row = taskSql.find.get(executionId, actor);
  return row && taskFromColumns(row);
}

export function listTasks(
  taskSql: TaskStatements,
  actor: string,
  page: { after?: string; limit: number },
): TaskRecord[] {
  return taskSql.list.all({ actor, after: page.after ?? null, limit: page.limit }).map(taskFromColumns);
}
