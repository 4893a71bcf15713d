import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { EXECUTION_STATES, FINISHED } from '../journal/states.js';
import { CLOCK, SQL } from './postgres/sql.js';
import { sqlStates } from './sql-columns.js';
import { migrate } from './sqlite/migrations.js';
import { prepareStatements } from './sqlite/sql.js';
import { expiresSql, TRIMMABLE, trimmableSql } from './sweep.js';

/**
 * The state sets have one home (journal/states.ts) and the sweep's rule one (store/sweep.ts):
 * every store's SQL is built from them, none types a state into its text. The contract suite
 * checks what the stores do; this checks that they say it in one place.
 */

const STORE = import.meta.dirname;
const STATE = EXECUTION_STATES.join('|');

/** The store's own source files: what ships, less the shipped migrations (which are never edited). */
function storeSources(dir = STORE): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'contract' ? [] : storeSources(path);
    const shipped = entry.name.endsWith('.ts') && !/\.(test|contract|d)\.ts$/.test(entry.name);
    return shipped && entry.name !== 'migrations.ts' ? [path] : [];
  });
}

describe('state sets and the sweep rule, one home each', () => {
  it('the trim deletes FINISHED executions only', () => {
    expect(TRIMMABLE).toEqual(FINISHED);
    expect(trimmableSql('@cutoff')).toContain(`state IN (${sqlStates(FINISHED)})`);
  });

  it("SQLite's sweep statements are the rule's conditions", () => {
    const db = new Database(':memory:');
    try {
      migrate(db);
      const sql = prepareStatements(db);
      for (const statement of [sql.expire, sql.wouldExpire])
        expect(statement.source).toContain(expiresSql('@now'));
      for (const statement of [sql.trim, sql.wouldTrim])
        expect(statement.source).toContain(trimmableSql('@cutoff'));
    } finally {
      db.close();
    }
  });

  it("PostgreSQL's sweep statements are the rule's conditions", () => {
    for (const statement of [SQL.expire, SQL.wouldExpire])
      expect(statement.text).toContain(expiresSql('c.now'));
    expect(SQL.trim.text).toContain(trimmableSql('c.now - $1::bigint'));
    expect(SQL.wouldTrim.text).toContain(trimmableSql(`${CLOCK} - $1::bigint`));
  });

  it('no store spells a state inside its SQL text (sqlState does), nor lists a set of states of its own', () => {
    const found: string[] = [];
    for (const file of storeSources()) {
      // Comments may quote a state in backticks; only code counts.
      const text = readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/^\s*\/\/.*$/gm, '');
      const where = relative(STORE, file);
      for (const template of text.matchAll(/`[^`]*`/gs)) {
        for (const literal of template[0].matchAll(new RegExp(`(sqlState\\()?'(${STATE})'`, 'g'))) {
          if (!literal[1]) found.push(`${where}: '${literal[2]}' in SQL`);
        }
      }
      for (const list of text.matchAll(new RegExp(`'(${STATE})'\\s*,\\s*'(${STATE})'`, 'g'))) {
        found.push(`${where}: a list of states (${list[0]})`);
      }
    }
    expect(found).toEqual([]);
  });
});
