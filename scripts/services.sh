#!/usr/bin/env bash
# Installs (when missing) and starts the services the tests use, so CI and a
# new contributor get the same thing. Idempotent: running services are kept.
#   Redis   127.0.0.1:6379   (Debian redis-server)
#   MariaDB 127.0.0.1:3306   (Debian mariadb-server; root, no password, database test)
#   MinIO   127.0.0.1:9100   (built from the Go module proxy; minioadmin/minioadmin)
#   Chromium                  (Debian chromium, for the chromium lane driver)
#   etcd binary               (Debian etcd-server; not started here: the etcd
#                              provider tests start a private one per test)
# Each store test reads its URL from the environment (see README).
set -euo pipefail

need_apt=()
command -v redis-server >/dev/null || need_apt+=(redis-server)
command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || need_apt+=(mariadb-server)
# Headless Chromium for the browser lanes (Debian's package; the tests drive
# it for real through chromedp).
command -v chromium >/dev/null || need_apt+=(chromium)
command -v etcd >/dev/null || need_apt+=(etcd-server)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== installing ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() { # name port seconds
  for _ in $(seq 1 $(( $3 * 10 ))); do port_open "$2" && return 0; sleep 0.1; done
  echo "!! $1 did not come up on 127.0.0.1:$2" >&2; return 1
}

if ! port_open 6379; then
  echo "== starting redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_port redis 6379 20
fi

if ! port_open 3306; then
  echo "== starting mariadb"
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
  wait_port mariadb 3306 60
fi
mysql -uroot -h127.0.0.1 -e 'CREATE DATABASE IF NOT EXISTS test' >/dev/null 2>&1 || true
echo "== services: redis :6379, mariadb :3306"

# MinIO 127.0.0.1:9100 (console 127.0.0.1:9101), user/password minioadmin,
# data in a throwaway directory. Not a Debian package: built from the Go
# module proxy into /usr/local/bin when missing. The server is AGPL and runs
# as its own process; the code only uses the minio-go client.
# Stop it with: kill "$(cat /tmp/paprika-minio/minio.pid)"
minio_dir=${PAPRIKA_MINIO_DIR:-/tmp/paprika-minio}
minio_live() { curl -sf -o /dev/null --max-time 2 http://127.0.0.1:9100/minio/health/live; }

if ! command -v curl >/dev/null; then
  echo "== installing curl"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq curl >/dev/null
fi

if ! minio_live; then
  if ! command -v minio >/dev/null && [ ! -x /usr/local/bin/minio ]; then
    command -v go >/dev/null || { echo "!! minio is missing and go is not on PATH to build it" >&2; exit 1; }
    echo "== building minio into /usr/local/bin (takes minutes the first time: ~3-8 min on 2 cores; seconds with a warm Go build cache)"
    GOBIN=/usr/local/bin go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c
  fi
  minio_bin=$(command -v minio || echo /usr/local/bin/minio)
  echo "== starting minio (data $minio_dir/data, log $minio_dir/minio.log)"
  mkdir -p "$minio_dir/data"
  # setsid + nohup: the server outlives this script and its terminal.
  MINIO_ROOT_USER=minioadmin MINIO_ROOT_PASSWORD=minioadmin MINIO_UPDATE=off \
    setsid nohup "$minio_bin" server "$minio_dir/data" \
      --address 127.0.0.1:9100 --console-address 127.0.0.1:9101 \
      >>"$minio_dir/minio.log" 2>&1 </dev/null &
  echo $! >"$minio_dir/minio.pid"
  for _ in $(seq 1 120); do
    minio_live && break
    if ! kill -0 "$(cat "$minio_dir/minio.pid")" 2>/dev/null; then
      break # exited: no use waiting
    fi
    sleep 0.5
  done
  if ! minio_live; then
    echo "!! minio did not answer http://127.0.0.1:9100/minio/health/live within 60 s; last log lines:" >&2
    tail -n 20 "$minio_dir/minio.log" >&2 || true
    exit 1
  fi
fi
echo "== services: minio :9100 (console :9101)"

# The real CDP clients of the browser gateway's tests (Node; no browser).
"$(dirname "$0")/cdp-clients.sh"
