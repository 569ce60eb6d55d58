#!/usr/bin/env bash
# Install slurmlet with its test dependencies into .venv and run the whole test suite.
# PostgreSQL at 127.0.0.1:5432 (database `test`) is started when it is installed but not up.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m venv .venv >/dev/null
.venv/bin/pip install -q --disable-pip-version-check -e '.[test]' --config-settings editable_mode=compat \
  >.venv/pip.log 2>&1 || { cat .venv/pip.log; exit 1; }
# byte-compile now: the CLI starts in every loop of the tools that drive it
.venv/bin/python -m compileall -q cli controller nodeagent >/dev/null
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null && command -v pg_ctlcluster >/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
fi
export PATH="$PWD/.venv/bin:$PATH"
exec .venv/bin/python -m pytest "$@"
