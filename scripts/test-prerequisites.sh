#!/usr/bin/env bash
# Runs before `npm test` (the `pretest` script): brings what the suite needs and the npm
# registry does not ship, so that `npm test` passes on a fresh machine with nothing installed by
# hand. Debian packages, installed with apt-get when missing:
#   openssh-server  the SSH action tool tests start their own sshd on a loopback high port
#   postgresql      the PostgreSQL tests start a throwaway server from its binaries
#   chromium        the console tests drive it headless (no browser download at install time)
#   prometheus      for its promtool: docs/alerts.yaml is checked and its rules unit-tested, a real
#                   scrape is linted (test/alerts.test.ts); the server it also installs is never started
# As root it installs them; otherwise it names what is missing and stops, since the suite
# would fail on it. IDEM_PG_URL (a server of your own) and IDEM_CHROMIUM (another browser)
# skip the matching package.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
if ! command -v sshd >/dev/null && [ ! -x /usr/sbin/sshd ]; then missing+=(openssh-server); fi
if [ -z "${IDEM_PG_URL:-}" ] && ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  missing+=(postgresql)
fi
if [ -z "${IDEM_CHROMIUM:-}" ] && [ ! -x /usr/bin/chromium ]; then missing+=(chromium); fi
if ! command -v promtool >/dev/null; then missing+=(prometheus); fi

if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "npm test needs the Debian packages: ${missing[*]}" >&2
    echo "install them (sudo apt-get install -y --no-install-recommends ${missing[*]}) or run npm test as root, which installs them" >&2
    exit 1
  fi
  echo "npm test: installing ${missing[*]} (apt-get)" >&2
  # Installing openssh-server, postgresql or prometheus must not leave a system sshd on port 22,
  # a system cluster or a Prometheus server on :9090 running: a policy-rc.d that refuses service
  # starts is in place for the install when the machine has none.
  added_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && added_policy=1
  fi
  trap 'if [ -n "$added_policy" ]; then rm -f /usr/sbin/policy-rc.d; fi' EXIT
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Some tests run the CLI as an unprivileged user (root ignores file modes, so a read-only store
# can only be tested as someone else): that user must be able to reach the checkout. Only the
# traversal bit of each parent directory is added.
if [ "$(id -u)" = 0 ]; then
  dir="$PWD"
  while [ "$dir" != / ]; do chmod o+x "$dir" 2>/dev/null || true; dir="$(dirname "$dir")"; done
fi
