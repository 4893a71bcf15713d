import { describe, expect, it } from 'vitest';
import { guessContract, nameSaysReadOnly } from './guess.js';

describe('nameSaysReadOnly', () => {
  it('takes a read verb first and no write verb anywhere', () => {
    for (const name of ['get_file_contents', 'list_issues', 'search_code', 'getUser', 'get-sum', 'read_file'])
      expect(nameSaysReadOnly(name), name).toBe(true);
    for (const name of [
      'create_or_update_file',
      'get_or_create_branch',
      'push_files',
      'echo',
      'merge_pull_request',
    ])
      expect(nameSaysReadOnly(name), name).toBe(false);
  });
});

describe('guessContract', () => {
  it('annotations first, then the name, then the description; unsure means review', () => {
    expect(guessContract({ name: 'create_thing', annotations: { readOnlyHint: true } }).replay).toBe(
      'read_only',
    );
    expect(guessContract({ name: 'get_thing', annotations: { destructiveHint: true } }).replay).toBe(
      'review',
    );
    expect(guessContract({ name: 'create_or_update_file' })).toEqual({
      replay: 'review',
      reason: 'its name says "create"',
    });
    expect(guessContract({ name: 'list_commits' })).toEqual({
      replay: 'read_only',
      reason: 'its name starts with "list"',
    });
    expect(guessContract({ name: 'time', description: 'Gets the current time' }).replay).toBe('read_only');
    expect(guessContract({ name: 'issue', description: 'Creates an issue' }).replay).toBe('review');
    expect(guessContract({ name: 'echo', description: 'Echoes back the input' }).replay).toBe('review');
  });
});
