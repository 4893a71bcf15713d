/**
 * The operator's log: one line per event on stderr (stdout may be the MCP
 * stream), filtered by level, as text (default) or JSON lines. Below every
 * layer so that anything may log; it knows no secrets itself — whoever holds
 * them wraps a log with `scrubbedLog` (the gateway does, with its credentials).
 */

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['text', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export type LogFields = Record<string, unknown>;

export interface Log {
  error(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  debug(message: string, fields?: LogFields): void;
  /** The least severe level written, when the log says (createLog's does): `debug` turns on the traffic lines. */
  readonly level?: LogLevel;
}

export interface LogOptions {
  /** The least severe level written (default `info`). */
  level?: LogLevel;
  format?: LogFormat;
  /** What a text line starts with (`idem gateway`). */
  name?: string;
  /** Where a line goes (default: process.stderr). */
  write?: (line: string) => void;
  /** Now, for JSON lines' `time` (default: the system clock). */
  clock?: () => number;
}

/**
 * A log writing one line per event. Text: `<name>: <level>: <message> {fields}`
 * (`info` lines without the level word, as the gateway always wrote them).
 * JSON: `{"time","level","msg",...fields}` — a field never overwrites those three.
 */
export function createLog(options: LogOptions = {}): Log {
  const threshold = LOG_LEVELS.indexOf(options.level ?? 'info');
  const format = options.format ?? 'text';
  const name = options.name ?? 'idem';
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  const clock = options.clock ?? Date.now;
  const line = (level: LogLevel, message: string, fields: LogFields | undefined): string => {
    if (format === 'json')
      return `${JSON.stringify({ ...fields, time: new Date(clock()).toISOString(), level, msg: message })}\n`;
    const tail = fields && Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : '';
    return `${name}: ${level === 'info' ? '' : `${level}: `}${message}${tail}\n`;
  };
  const at =
    (level: LogLevel) =>
    (message: string, fields?: LogFields): void => {
      if (LOG_LEVELS.indexOf(level) > threshold) return;
      try {
        write(line(level, message, fields));
      } catch {
        // A log that cannot be written (stderr closed) must not fail what was being logged.
      }
    };
  return {
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    level: LOG_LEVELS[threshold] as LogLevel,
  };
}

/** A log whose messages and fields pass through `scrub` first (known secrets replaced). */
export function scrubbedLog(log: Log, scrub: <T>(value: T) => T): Log {
  const at =
    (level: LogLevel) =>
    (message: string, fields?: LogFields): void =>
      log[level](scrub(message), fields ? scrub(fields) : undefined);
  return {
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    ...(log.level ? { level: log.level } : {}),
  };
}

/** A bounded, one-line excerpt of text from elsewhere (an upstream's stdout): at most `max` characters. */
export function excerpt(text: string, max = 200): string {
  // Control characters would break the one-line-per-event log (and could fake a line).
  const flat = text.replace(/[\p{Cc}\u2028\u2029]/gu, ' ');
  return flat.length <= max ? flat : `${flat.slice(0, max)}…`;
}
