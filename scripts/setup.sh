# Sourced by scripts/run and scripts/test: system packages (when root) and the .venv.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
# Without .pyc files every Python process recompiles its imports (uv writes none).
unset PYTHONDONTWRITEBYTECODE

need_apt() {
  # $1: a command or path that proves the packages are present; rest: the packages.
  local probe=$1; shift
  if [ -e "$probe" ] || command -v "$probe" >/dev/null 2>&1; then return 0; fi
  if [ "$(id -u)" != 0 ]; then
    echo "missing $probe: install the Debian packages $* (as root: apt-get install $*)" >&2
    return 1
  fi
  if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq; APT_UPDATED=1; fi
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

#: The installer, pinned: another uv may resolve or install differently. scripts/lock uses it too.
UV_VERSION=0.13.9

venv_uv() {
  # The .venv, with the pinned uv in it.
  if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
  case "$(.venv/bin/uv --version 2>/dev/null)" in
    "uv $UV_VERSION "* | "uv $UV_VERSION") ;;
    *) .venv/bin/pip install -q "uv==$UV_VERSION" ;;
  esac
}

venv_install() {
  # $1: a lock file (scripts/lock writes them from pyproject.toml), installed with its hashes
  # checked. A stamp per lock skips the install while neither the lock nor the installer changed.
  local lock=$1 stamp=.venv/.installed-${1//\//_}
  venv_uv
  local sum; sum=$( (cat "$lock"; echo "uv $UV_VERSION") | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then return 0; fi
  .venv/bin/uv pip install -q --python .venv/bin/python --require-hashes -r "$lock"
  # uv writes no .pyc: compile what the app imports now, not on a newcomer's first page.
  .venv/bin/python scripts/warm_bytecode.py
  echo "$sum" >"$stamp"
}
