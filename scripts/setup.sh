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

venv_install() {
  # $1: the requirements file. A stamp skips the install when nothing changed.
  local req=$1 stamp=.venv/.installed-$(basename "$1")
  if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
  if [ ! -x .venv/bin/uv ]; then .venv/bin/pip install -q uv; fi
  local sum; sum=$(cat requirements*.txt | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then return 0; fi
  .venv/bin/uv pip install -q --python .venv/bin/python -r "$req"
  echo "$sum" >"$stamp"
}
