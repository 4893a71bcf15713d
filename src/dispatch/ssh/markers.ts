import { quote } from 'shell-quote';

/**
 * The durable marker protocol (docs/channels-ssh.md). On the host,
 * each execution id has a directory `<markerDir>/<id>/`:
 *
 * - `mkdir <id>` is the start: POSIX mkdir is atomic and fails when the directory
 *   exists, so exactly one sender of an id gets to run the command; every other
 *   one is told the id already has a marker and is handed the marker instead.
 * - `started` (a UTC time) is written right after; the command then runs under
 *   `sh -c` with stdin from /dev/null, SIGHUP ignored (a dropped connection does
 *   not stop it), stdout and stderr into `stdout` and `stderr` in the directory.
 * - When it ends, both files are cut to their last `outputLimit` bytes, then
 *   `exit` is written (`<code> <stdout bytes> <stderr bytes>`) to a temporary
 *   name and renamed — rename is atomic, so `exit` is either absent or complete.
 *   `exit` is the commit point: its presence means the outcome is final.
 * - Finished markers (with `exit`) older than `retentionDays` are removed by the
 *   next run on the host; a marker without `exit` is never trimmed: it is an
 *   outcome nobody knows, for an operator to look at.
 *
 * The wrapper reports on its stdout (the command's own output only ever goes to
 * files, so the report cannot be forged by it) with lines starting `IDEM-MARKER`.
 */
const TAG = 'IDEM-MARKER';

/** What the host said about one execution id. */
export type MarkerReport =
  /** The marker directory cannot be created or read: nothing was run. */
  | { state: 'unavailable' }
  /** No marker: the command was never started under this id. */
  | { state: 'none' }
  /** Started and not (yet) finished — or it died without recording an end. */
  | { state: 'started' }
  | {
      state: 'exit';
      code: number;
      /** Total bytes the command wrote, of which the tails below are the end. */
      stdoutBytes: number;
      stderrBytes: number;
      stdout: Buffer;
      stderr: Buffer;
    };

export interface MarkerSettings {
  /** Directory of the markers on the host (relative: to the login's home). */
  dir: string;
  /** How many bytes of each of stdout and stderr are kept (and returned). */
  outputLimit: number;
  /** Finished markers older than this many days are removed. */
  retentionDays: number;
}

export const MARKER_DEFAULTS = Object.freeze({ outputLimit: 64 * 1024, retentionDays: 7 });

/** Execution ids are `exe_` + a ULID; anything else is not put into a path on a host. */
const MARKER_ID = /^[A-Za-z0-9_-]{1,128}$/;

export function checkMarkerId(id: string): string {
  if (!MARKER_ID.test(id)) throw new Error(`not a usable execution id for a marker: ${JSON.stringify(id)}`);
  return id;
}

/** Shell that prints the report of marker `$m` (see MarkerReport). */
const REPORT = `report() {
  if [ -f "$m/exit" ]; then
    printf '${TAG} exit %s\\n' "$(cat "$m/exit")"
    cat "$m/stdout" 2>/dev/null
    cat "$m/stderr" >&2 2>/dev/null
  elif [ -d "$m" ]; then
    printf '${TAG} started\\n'
  else
    printf '${TAG} none\\n'
  fi
}`;

function prelude(settings: MarkerSettings, id: string): string {
  return [`d=${quote([settings.dir])}`, `m="$d"/${checkMarkerId(id)}`, REPORT].join('\n');
}

/** The remote script that runs `command` at most once under execution id `id`. */
export function runScript(settings: MarkerSettings, id: string, command: string): string {
  const limit = Math.floor(settings.outputLimit);
  const days = Math.floor(settings.retentionDays);
  return `${prelude(settings, id)}
umask 077
if ! mkdir -p -- "$d" 2>/dev/null; then printf '${TAG} unavailable\\n'; exit 0; fi
if ! mkdir -- "$m" 2>/dev/null; then
  if [ -d "$m" ]; then printf '${TAG} exists\\n'; report; else printf '${TAG} unavailable\\n'; fi
  exit 0
fi
date -u '+%Y-%m-%dT%H:%M:%SZ' >"$m/started"
trap '' HUP
sh -c ${quote([command])} </dev/null >"$m/stdout" 2>"$m/stderr"
code=$?
ob=$(wc -c <"$m/stdout" | tr -d ' ')
eb=$(wc -c <"$m/stderr" | tr -d ' ')
for f in stdout stderr; do tail -c ${limit} "$m/$f" >"$m/$f.tail" && mv -f "$m/$f.tail" "$m/$f"; done
printf '%s %s %s\\n' "$code" "$ob" "$eb" >"$m/exit.tmp" && mv -f "$m/exit.tmp" "$m/exit"
(cd -- "$d" && find . -path './*/exit' -type f -mtime +${days} -exec sh -c 'for f do rm -rf -- "\${f%/exit}"; done' sh {} +) 2>/dev/null
report
`;
}

/** The remote script that only reads the marker of `id` (recovery): never runs anything. */
export function probeScript(settings: MarkerSettings, id: string): string {
  return `${prelude(settings, id)}\nreport\n`;
}

/** What the run script answered: the marker, and whether it existed before this run (nothing ran now). */
export interface RunReport {
  existed: boolean;
  marker: MarkerReport;
}

/** Reads a run script's report; undefined when the output is not one (cut off, or not our script). */
export function parseRunReport(stdout: Buffer, stderr: Buffer): RunReport | undefined {
  const existsLine = `${TAG} exists\n`;
  const existed = stdout.subarray(0, existsLine.length).toString('latin1') === existsLine;
  const marker = parseMarkerReport(existed ? stdout.subarray(existsLine.length) : stdout, stderr);
  if (!marker || (marker.state === 'none' && !existed)) return undefined;
  return { existed, marker };
}

/** Reads a marker report (probe script, or the tail of a run). */
export function parseMarkerReport(stdout: Buffer, stderr: Buffer): MarkerReport | undefined {
  const newline = stdout.indexOf(0x0a);
  if (newline < 0) return undefined;
  const header = stdout.subarray(0, newline).toString('latin1');
  const simple = /^IDEM-MARKER (unavailable|none|started)$/.exec(header);
  if (simple) return { state: simple[1] as 'unavailable' | 'none' | 'started' };
  const exit = /^IDEM-MARKER exit (\d{1,3}) (\d+) (\d+)$/.exec(header);
  if (!exit) return undefined;
  return {
    state: 'exit',
    code: Number(exit[1]),
    stdoutBytes: Number(exit[2]),
    stderrBytes: Number(exit[3]),
    stdout: stdout.subarray(newline + 1),
    stderr,
  };
}
