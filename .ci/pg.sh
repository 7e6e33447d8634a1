# Throwaway PostgreSQL for tests: source this file, then pg_start / pg_stop.
# Runs initdb + pg_ctl as the postgres user when we are root (the server refuses root),
# on a free loopback port with trust auth; exports DATABASE_URL. Nothing outside $PGTMP is touched.
# pg_start_stock / pg_stop_stock: a second server on PostgreSQL's stock settings (only durability
# off, max_connections 20: 1,280 lock slots), exporting LEXPLAIN_TEST_STOCK_URL and
# LEXPLAIN_TEST_STOCK_LOG: the store must work on a server nobody tuned for it (issue 20).
# pg_start_beside / pg_stop_beside: one more tuned server, exporting BESIDE_DATABASE_URL, for a
# pytest run beside tests/stores (scripts/test), whose failure tests kill every 'lexplain'
# backend on their server and restart it: on a shared server they would kill the other run's.

# The newest Debian PostgreSQL's binaries.
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
#: The CI server's settings: nothing in a test server must survive a crash, so no durability.
PG_TUNED_SETTINGS="-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
# _pg_launch DIR SETTINGS: initdb DIR/data and start it on a free port; prints the port.
_pg_launch() {
  local dir=$1 settings=$2 port as_pg=()
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; as_pg=(runuser -u postgres --); fi
  ( cd "$dir" && "${as_pg[@]}" "$PGBIN/initdb" -D "$dir/data" -U postgres -A trust \
      -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 ) || { cat "$dir/initdb.log" >&2; return 1; }
  ( cd "$dir" && "${as_pg[@]}" "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 $settings" \
      start >/dev/null ) || { cat "$dir/server.log" >&2; return 1; }
  echo "$port"
}
# _pg_halt DIR: stop the server of DIR/data and remove DIR.
_pg_halt() {
  local as_pg=()
  if [ "$(id -u)" = 0 ]; then as_pg=(runuser -u postgres --); fi
  ( cd "$1" && "${as_pg[@]}" "$PGBIN/pg_ctl" -D "$1/data" -m fast -w -t 120 stop >/dev/null 2>&1 ) || true
  rm -rf "$1"
}
pg_start() {
  PGTMP=$(mktemp -d /tmp/lexplain-pg.XXXXXX)
  PGPORT=$(_pg_launch "$PGTMP" "$PG_TUNED_SETTINGS") || return 1
  export PGBIN PGTMP PGPORT
  export DATABASE_URL="postgresql://postgres@127.0.0.1:$PGPORT/postgres"
  # The restart test in tests/stores needs to stop and start this very server.
  export LEXPLAIN_TEST_PG_CTL="$PGBIN/pg_ctl"
  export LEXPLAIN_TEST_PG_DATA="$PGTMP/data"
  export LEXPLAIN_TEST_PG_AS_USER="$([ "$(id -u)" = 0 ] && echo postgres || true)"
}
pg_stop() {
  [ -n "${PGTMP:-}" ] || return 0
  _pg_halt "$PGTMP"; PGTMP=
}
pg_start_stock() {
  STOCK_PGTMP=$(mktemp -d /tmp/lexplain-pg-stock.XXXXXX)
  local port
  port=$(_pg_launch "$STOCK_PGTMP" "-c fsync=off -c synchronous_commit=off -c max_connections=20") || return 1
  export STOCK_PGTMP PGBIN
  export LEXPLAIN_TEST_STOCK_URL="postgresql://postgres@127.0.0.1:$port/postgres"
  export LEXPLAIN_TEST_STOCK_LOG="$STOCK_PGTMP/server.log"
}
pg_stop_stock() {
  [ -n "${STOCK_PGTMP:-}" ] || return 0
  _pg_halt "$STOCK_PGTMP"; STOCK_PGTMP=
}
pg_start_beside() {
  BESIDE_PGTMP=$(mktemp -d /tmp/lexplain-pg-beside.XXXXXX)
  local port
  port=$(_pg_launch "$BESIDE_PGTMP" "$PG_TUNED_SETTINGS") || return 1
  export BESIDE_PGTMP PGBIN
  export BESIDE_DATABASE_URL="postgresql://postgres@127.0.0.1:$port/postgres"
}
pg_stop_beside() {
  [ -n "${BESIDE_PGTMP:-}" ] || return 0
  _pg_halt "$BESIDE_PGTMP"; BESIDE_PGTMP=
}
