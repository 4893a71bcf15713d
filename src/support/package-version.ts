import { readFileSync } from 'node:fs';

/**
 * Idem's version, from its package.json (two levels up from src/support/ and from
 * dist/support/ alike): what `User-Agent: idem/<version>` says to an HTTP tool's target.
 */
export const IDEM_VERSION: string = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** The User-Agent an HTTP action tool sends unless its spec sets one: an API may refuse a request without. */
export const IDEM_USER_AGENT = `idem/${IDEM_VERSION}`;
