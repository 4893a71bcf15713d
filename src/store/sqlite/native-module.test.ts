import { describe, expect, it } from 'vitest';
import { nativeModuleProblem } from './native-module.js';

describe('nativeModuleProblem', () => {
  it('says in one line how to build a missing module', () => {
    const error = new Error(
      'Could not locate the bindings file. Tried:\n → /x/build/better_sqlite3.node\n → /x/build/Debug/better_sqlite3.node',
    );
    const text = nativeModuleProblem(error);
    expect(text).toContain('npm rebuild better-sqlite3');
    expect(text).not.toContain('\n');
  });

  it('names a module built for another Node.js', () => {
    const error = new Error(
      "The module '/x/better_sqlite3.node' was compiled against a different Node.js version using NODE_MODULE_VERSION 127.",
    );
    expect(nativeModuleProblem(error)).toContain(process.version);
  });

  it('leaves other errors alone', () => {
    expect(nativeModuleProblem(new Error('SQLITE_CANTOPEN: unable to open database file'))).toBeUndefined();
    expect(nativeModuleProblem('Could not locate the bindings file')).toBeUndefined();
  });
});
