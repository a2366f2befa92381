#!/usr/bin/env bash
# Installs (when missing) and starts the services the tests use, so CI and a
# new contributor get the same thing. Idempotent: running services are kept.
#   Redis   127.0.0.1:6379   (Debian redis-server)
#   MariaDB 127.0.0.1:3306   (Debian mariadb-server; root, no password, database test)
# Each store test reads its URL from the environment (see README).
set -euo pipefail

need_apt=()
command -v redis-server >/dev/null || need_apt+=(redis-server)
command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || need_apt+=(mariadb-server)
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
