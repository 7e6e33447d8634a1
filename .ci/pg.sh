# Throwaway PostgreSQL for tests: source this file, then pg_start / pg_stop.
# Runs initdb + pg_ctl as the postgres user when we are root (the server refuses root),
# on a free loopback port with trust auth; exports DATABASE_URL. Nothing outside $PGTMP is touched.
pg_start() {
  PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  PGTMP=$(mktemp -d /tmp/lexplain-pg.XXXXXX)
  PGPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  local as_pg=()
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$PGTMP"; as_pg=(runuser -u postgres --); fi
  ( cd "$PGTMP" && "${as_pg[@]}" "$PGBIN/initdb" -D "$PGTMP/data" -U postgres -A trust \
      -E UTF8 --locale=C.UTF-8 --no-sync >"$PGTMP/initdb.log" 2>&1 ) || { cat "$PGTMP/initdb.log"; return 1; }
  ( cd "$PGTMP" && "${as_pg[@]}" "$PGBIN/pg_ctl" -D "$PGTMP/data" -l "$PGTMP/server.log" -w -t 60 \
      -o "-p $PGPORT -k $PGTMP -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
      start >/dev/null ) || { cat "$PGTMP/server.log"; return 1; }
  export PGBIN PGTMP PGPORT
  export DATABASE_URL="postgresql://postgres@127.0.0.1:$PGPORT/postgres"
  # The restart test in tests/stores needs to stop and start this very server.
  export LEXPLAIN_TEST_PG_CTL="$PGBIN/pg_ctl"
  export LEXPLAIN_TEST_PG_DATA="$PGTMP/data"
  export LEXPLAIN_TEST_PG_AS_USER="$([ "$(id -u)" = 0 ] && echo postgres || true)"
}
pg_stop() {
  [ -n "${PGTMP:-}" ] || return 0
  local as_pg=()
  if [ "$(id -u)" = 0 ]; then as_pg=(runuser -u postgres --); fi
  ( cd "$PGTMP" && "${as_pg[@]}" "$PGBIN/pg_ctl" -D "$PGTMP/data" -m fast -w stop >/dev/null 2>&1 ) || true
  rm -rf "$PGTMP"; PGTMP=
}
