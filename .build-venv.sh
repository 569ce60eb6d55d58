#!/usr/bin/env bash
# Install slurmlet with its test dependencies into .venv and run the whole test suite.
# PostgreSQL at 127.0.0.1:5432 (database `test`) is started when it is installed but not up.
set -euo pipefail
cd "$(dirname "$0")"
# the suite runs commands as the users it makes: the venv's Python must be one every user can run (one
# under /root, as pyenv's is, is not; Debian's /usr/bin/python3 is), as an install for several users's
py=python3
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null && ! runuser -u nobody -- "$(command -v python3)" -c '' 2>/dev/null; then
  for alt in /usr/bin/python3 /usr/local/bin/python3; do
    if runuser -u nobody -- "$alt" -c 'import sys, venv; assert sys.version_info >= (3, 11)' 2>/dev/null; then
      py=$alt
      break
    fi
  done
fi
"$py" -m venv .venv >/dev/null
# SLURMLET_COMPILE=1: with the simulator's compiled core (mypyc), which tests/unit/sim compares with the Python one
SLURMLET_COMPILE=1 .venv/bin/pip install -q --disable-pip-version-check -e '.[test]' --config-settings editable_mode=strict \
  >.venv/pip.log 2>&1 || { cat .venv/pip.log; exit 1; }
# byte-compile now: the CLI starts in every loop of the tools that drive it. A strict editable
# install is a tree of links to the source under build/ (a new module needs this script run again)
.venv/bin/python -c 'import compileall, slurmlet; all(compileall.compile_dir(p, quiet=1) for p in slurmlet.__path__)'
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null && command -v pg_ctlcluster >/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
fi
# the dashboard's browser tests drive Debian's Chromium (tests/browser; they skip where there is none)
if ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  { apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; }; } >.venv/apt.log 2>&1 ||
    echo "test.sh: could not install chromium (see .venv/apt.log): the browser tests will skip" >&2
fi
export PATH="$PWD/.venv/bin:$PATH"
# lint and type-check before the tests (pyproject's [tool.ruff] and [tool.mypy]); mypy reads the package
# through the strict editable install's tree of links (build/__editable__.*/slurmlet), as slurmlet.*: the
# one the install's .pth file names (an install with and one without the compiled core each leave one)
.venv/bin/ruff check --quiet .
(cd "$(cat .venv/lib/python3*/site-packages/__editable__.slurmlet-*.pth)" && "$OLDPWD/.venv/bin/mypy" --config-file "$OLDPWD/pyproject.toml" \
  --cache-dir "$OLDPWD/.mypy_cache" --no-error-summary -p slurmlet)
exit 0
