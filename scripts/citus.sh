# A throwaway Citus cluster for tests: source this file, then citus_start / citus_stop.
#
# citus_build compiles Citus 13.2.2 from vendor/ (in the repository, SHA-256 checked) once per machine into
# Debian's PostgreSQL 15: the build (about 3 minutes on 2 cores) is cached under
# /var/cache/lexplain-citus/<sha256 of the tarball>/, so a second run only checks a stamp. Citus
# 13 is the last line that supports PostgreSQL 15, the only server Debian 12 ships; a packaged
# Citus would need the Citus apt repository, which CI cannot reach.
#
# citus_start starts a coordinator and two workers on loopback (initdb folders under one
# /tmp/lexplain-citus.XXXXXX, trust auth, fsync off, wal_level=logical so shard moves work),
# registers the workers and exports LEXPLAIN_TEST_CITUS_URL (the coordinator). citus_add_worker
# starts one more node and registers it (it needs only the exported CITUS_* variables, so a test
# can call it through `bash -c 'source scripts/citus.sh && citus_add_worker'`). citus_stop stops
# every node of the folder by its pid file and removes the folder. CITUS_NODE_SETTINGS (lines of
# postgresql.conf) is added to every node's settings (bench/bench_citus.py tunes them so).

CITUS_VERSION=13.2.2
#: The vendored tarball's and patch's SHA-256 (vendor/README.md).
CITUS_TARBALL_SHA256=dd2453caec20a830e5e63f1def5c5a98cb6f57ae510407cdcd800916fcdab430
CITUS_PATCH_SHA256=237df0b38edfc0918f27cdd50a3448c95d6336a25ee755e7281bf57ffdafceef
#: Shards per distributed table on the test cluster: Citus' default (32) makes each test module's
#: CREATE TABLE cost 32 tables per worker; 8 still spreads tenants over both workers.
CITUS_TEST_SHARD_COUNT=${CITUS_TEST_SHARD_COUNT:-8}

_citus_root() { (cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd); }

_citus_as_pg() {
  # Run a command as the postgres user when we are root (the server refuses root).
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

citus_build() {
  local root vendor tarball patchfile sum cache pgconfig libdir
  root=$(_citus_root)
  vendor=${CITUS_VENDOR_DIR:-$root/vendor}
  tarball=$vendor/citus-$CITUS_VERSION.tar.gz
  patchfile=$vendor/citus-$CITUS_VERSION-pg15.20.patch
  for f in "$tarball" "$patchfile"; do
    [ -f "$f" ] || { echo "citus: no $f (it is part of the repository: vendor/)" >&2; return 1; }
  done
  # The sums vendor/README.md names: a changed or truncated file is refused before it is built.
  sum=$(sha256sum "$tarball" | cut -d' ' -f1)
  if [ "$sum" != "$CITUS_TARBALL_SHA256" ]; then
    echo "citus: $tarball has SHA-256 $sum, not $CITUS_TARBALL_SHA256; refusing to build it" >&2
    return 1
  fi
  if [ "$(sha256sum "$patchfile" | cut -d' ' -f1)" != "$CITUS_PATCH_SHA256" ]; then
    echo "citus: $patchfile is not the patch vendor/README.md names; refusing to build" >&2
    return 1
  fi
  cache=${CITUS_CACHE_DIR:-/var/cache/lexplain-citus}/$sum
  pgconfig=/usr/lib/postgresql/15/bin/pg_config
  libdir=/usr/lib/postgresql/15/lib
  if [ -f "$cache/stamp" ] && [ -f "$libdir/citus.so" ]; then return 0; fi
  if [ "$(id -u)" != 0 ]; then
    echo "citus: not installed and not root; run scripts/test as root once to build it" >&2
    return 1
  fi
  mkdir -p "$cache"
  (
    # One build per machine even when two runs start together: the second waits, then skips.
    flock 9
    if [ -f "$cache/stamp" ] && [ -f "$libdir/citus.so" ]; then exit 0; fi
    local started=$SECONDS
    if [ ! -x "$pgconfig" ] || [ ! -f /usr/include/curl/curl.h ] || [ ! -f /usr/include/lz4.h ] \
      || [ ! -f /usr/include/zstd.h ] || [ ! -f /usr/include/gssapi/gssapi.h ]; then
      apt-get update -qq
      apt-get install -y -qq --no-install-recommends postgresql-15 postgresql-server-dev-15 \
        libcurl4-openssl-dev liblz4-dev libzstd-dev libkrb5-dev libssl-dev gcc make flex bison patch >/dev/null
    fi
    if [ -f "$cache/stamp" ]; then
      # Built before, but the library is gone (a reinstalled server): install again, no rebuild.
      make -C "$cache/citus-$CITUS_VERSION" install >"$cache/install.log" 2>&1 \
        || { tail -30 "$cache/install.log"; exit 1; }
      exit 0
    fi
    rm -rf "$cache/citus-$CITUS_VERSION"
    tar -xzf "$tarball" -C "$cache"
    if [ -n "$patchfile" ]; then (cd "$cache" && patch -p0 -s <"$patchfile") || exit 1; fi
    echo "citus: building $CITUS_VERSION into PostgreSQL $($pgconfig --version) (once per machine)" >&2
    (cd "$cache/citus-$CITUS_VERSION" && ./configure -q PG_CONFIG="$pgconfig" >"$cache/build.log" 2>&1 \
      && make -j"$(nproc)" >>"$cache/build.log" 2>&1 && make install >>"$cache/build.log" 2>&1) \
      || { tail -40 "$cache/build.log"; exit 1; }
    echo "$((SECONDS - started)) s, $($pgconfig --version)" >"$cache/stamp"
    echo "citus: built in $((SECONDS - started)) s" >&2
  ) 9>"$cache.lock"
}

_citus_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

_citus_node() {
  # $1: node name (folder under $CITUS_TMP); prints the port the started node listens on.
  local name=$1 port
  port=$(_citus_free_port)
  (cd "$CITUS_TMP" && _citus_as_pg "$CITUS_PGBIN/initdb" -D "$CITUS_TMP/$name" -U postgres -A trust \
    -E UTF8 --locale=C.UTF-8 --no-sync >"$CITUS_TMP/$name.initdb.log" 2>&1) \
    || { cat "$CITUS_TMP/$name.initdb.log" >&2; return 1; }
  cat >>"$CITUS_TMP/$name/postgresql.conf" <<EOF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$CITUS_TMP'
shared_preload_libraries = 'citus'
wal_level = logical
max_wal_senders = 20
max_replication_slots = 20
max_connections = 300
max_prepared_transactions = 300
fsync = off
synchronous_commit = off
full_page_writes = off
citus.shard_count = $CITUS_TEST_SHARD_COUNT
${CITUS_NODE_SETTINGS:-}
EOF
  (cd "$CITUS_TMP" && _citus_as_pg "$CITUS_PGBIN/pg_ctl" -D "$CITUS_TMP/$name" \
    -l "$CITUS_TMP/$name.log" -w -t 60 start >/dev/null) \
    || { cat "$CITUS_TMP/$name.log" >&2; return 1; }
  _citus_psql "$port" -c "CREATE EXTENSION IF NOT EXISTS citus" >/dev/null || return 1
  echo "$port"
}

_citus_psql() {
  local port=$1; shift
  (cd "$CITUS_TMP" && "$CITUS_PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" \
    -U postgres -d postgres "$@")
}

citus_start() {
  citus_build || return 1
  CITUS_PGBIN=/usr/lib/postgresql/15/bin
  CITUS_TMP=$(mktemp -d /tmp/lexplain-citus.XXXXXX)
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$CITUS_TMP"; fi
  export CITUS_PGBIN CITUS_TMP
  # The three nodes initdb and start side by side (initdb is most of the time, about 5 s each
  # on a busy 2-core machine); copying one folder would give them one system identifier.
  local name pids=() ok=1
  for name in coordinator worker1 worker2; do
    _citus_node "$name" >"$CITUS_TMP/$name.port" &
    pids+=($!)
  done
  for name in "${pids[@]}"; do wait "$name" || ok=0; done
  [ "$ok" = 1 ] || { citus_stop; return 1; }
  CITUS_COORD_PORT=$(cat "$CITUS_TMP/coordinator.port")
  export CITUS_COORD_PORT
  _citus_psql "$CITUS_COORD_PORT" \
    -c "SELECT citus_set_coordinator_host('127.0.0.1', $CITUS_COORD_PORT)" \
    -c "SELECT citus_add_node('127.0.0.1', $(cat "$CITUS_TMP/worker1.port"))" \
    -c "SELECT citus_add_node('127.0.0.1', $(cat "$CITUS_TMP/worker2.port"))" \
    >/dev/null || { citus_stop; return 1; }
  export LEXPLAIN_TEST_CITUS_URL="postgresql://postgres@127.0.0.1:$CITUS_COORD_PORT/postgres"
}

citus_add_worker() {
  # Start one more worker and register it with the coordinator; prints its port.
  local n port
  n=$(find "$CITUS_TMP" -maxdepth 1 -type d -name 'worker*' | wc -l)
  port=$(_citus_node "worker$((n + 1))") || return 1
  _citus_psql "$CITUS_COORD_PORT" -c "SELECT citus_add_node('127.0.0.1', $port)" >/dev/null || return 1
  echo "$port"
}

citus_stop() {
  [ -n "${CITUS_TMP:-}" ] && [ -d "$CITUS_TMP" ] || return 0
  local dir
  for dir in "$CITUS_TMP"/*/; do
    [ -f "$dir/postmaster.pid" ] || continue
    (cd "$CITUS_TMP" && _citus_as_pg "$CITUS_PGBIN/pg_ctl" -D "$dir" -m fast -w stop >/dev/null 2>&1) || true
  done
  rm -rf "$CITUS_TMP"
  CITUS_TMP=
  unset LEXPLAIN_TEST_CITUS_URL
}
