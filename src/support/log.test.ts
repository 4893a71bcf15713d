import { describe, expect, it } from 'vitest';
import { createLog, excerpt, scrubbedLog } from './log.js';

describe('the operator log', () => {
  it('text: one line per event, filtered by level; info without a level word', () => {
    const lines: string[] = [];
    const log = createLog({ level: 'warn', name: 'idem gateway', write: (l) => lines.push(l) });
    log.debug('not shown');
    log.info('not shown either');
    log.warn('upstream a went down', { upstream: 'a' });
    log.error('broken');
    expect(lines).toEqual([
      'idem gateway: warn: upstream a went down {"upstream":"a"}\n',
      'idem gateway: error: broken\n',
    ]);
    const info: string[] = [];
    createLog({ write: (l) => info.push(l), name: 'idem gateway' }).info('started');
    expect(info).toEqual(['idem gateway: started\n']);
  });

  it('json: {time, level, msg, ...fields} per line; a field cannot overwrite time, level or msg', () => {
    const lines: string[] = [];
    const log = createLog({ format: 'json', level: 'debug', write: (l) => lines.push(l), clock: () => 0 });
    log.debug('hello', { upstream: 'a', level: 'forged', msg: 'forged' });
    expect(lines).toHaveLength(1);
    expect(lines[0]?.endsWith('\n')).toBe(true);
    expect(JSON.parse(lines[0] as string)).toEqual({
      time: '1970-01-01T00:00:00.000Z',
      level: 'debug',
      msg: 'hello',
      upstream: 'a',
    });
  });

  it('scrubbedLog passes message and fields through the scrub; excerpt is bounded and one line', () => {
    const lines: string[] = [];
    const log = scrubbedLog(
      createLog({ write: (l) => lines.push(l), name: 'x' }),
      <T>(v: T) => JSON.parse(JSON.stringify(v).replaceAll('s3cret', '[secret]')) as T,
    );
    log.warn('key s3cret', { line: 'has s3cret' });
    expect(lines).toEqual(['x: warn: key [secret] {"line":"has [secret]"}\n']);
    expect(excerpt('a\nb\u2028c')).toBe('a b c');
    expect(excerpt('z'.repeat(1000))).toHaveLength(201);
  });
});
