# tools/lib.sh: shared by tools/*.sh.  Installs what tablestore needs to build
# and test, builds and installs it, and runs a throwaway PostgreSQL 15 server
# as the postgres OS user on a Unix socket in a temporary directory.
# Source it; it defines functions only.  Run as a script, it runs one of
# them: "bash $TS_LIB ts_until_file FILE" from psql's \! (which runs sh,
# not the test's shell) waits as the function does.

# PGBIN may be set to another PostgreSQL 15 installation (a relocated copy,
# say) so that two checkouts can build, install and test side by side.
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PATH="$PGBIN:$PATH"
# this file, by its absolute path
TS_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh

# Debian packages, by purpose: what building the extension needs, what the
# gateway adds, and what the tests add (random SQL, fuzzers, pgTAP, the
# router's PL/Proxy, both Azure SDKs).  The demos install only the first
# one or two; the test command installs all three.
TS_DEPS_BUILD="postgresql-15 postgresql-server-dev-15 make gcc libpq-dev"
TS_DEPS_GATEWAY="libmicrohttpd-dev libjson-c-dev libssl-dev pkg-config openssl curl"
TS_DEPS_TEST="postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl libipc-run-perl clang libclang-rt-14-dev sqlsmith python3 libpq5 postgresql-15-plproxy python3-azure"

# ts_apt_install PKG...: install those of the Debian packages that are missing
# (as root), saying which.
ts_apt_install() {
	local missing="" p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
	done
	[ -n "$missing" ] || return 0
	echo "== installing:$missing"
	[ "$(id -u)" = 0 ] || { echo "need root to install$missing" >&2; return 1; }
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
}

# ts_install_build_deps [gateway]: what building the extension (and the
# gateway) needs, nothing more.
ts_install_build_deps() {
	if [ "${1:-}" = gateway ]; then
		ts_apt_install $TS_DEPS_BUILD $TS_DEPS_GATEWAY
	else
		ts_apt_install $TS_DEPS_BUILD
	fi
}

# ts_install_deps: everything the test command needs, node and npm for the
# JavaScript SDK test (node >= 20 for @azure/data-tables 13.3) included.
ts_install_deps() {
	local extra=""
	command -v node >/dev/null 2>&1 || extra="nodejs"
	ts_apt_install $TS_DEPS_BUILD $TS_DEPS_GATEWAY $TS_DEPS_TEST $extra || return 1
	# NodeSource's nodejs includes npm; Debian's needs the npm package
	command -v npm >/dev/null 2>&1 || ts_apt_install npm
}

# Build with warnings as errors and assertions on, then install.
ts_build_install() {
	make -s clean >/dev/null
	make -s COPT="-Werror -DUSE_ASSERT_CHECKING" PG_CONFIG="$PGBIN/pg_config"
	make -s install PG_CONFIG="$PGBIN/pg_config" >/dev/null
}

# TS_PRELOAD=0 starts servers without shared_preload_libraries=tablestore:
# tskey then logs with generic WAL instead of its resource manager
# (doc/index-am.md).  TS_WAL_CHECK is the wal_consistency_checking value
# that covers tskey's records either way.
TS_PRELOAD=${TS_PRELOAD:-1}
if [ "$TS_PRELOAD" = 1 ]; then TS_WAL_CHECK=generic,tskey; else TS_WAL_CHECK=generic; fi

# ts_start_server DIR [extra postgres -c options...]: initdb and start a
# server in DIR (owned by postgres), socket in DIR, no TCP.  The library is
# preloaded (unless TS_PRELOAD=0) through postgresql.conf, so that a
# restart with other options, and a standby made by pg_basebackup, keep it:
# a server must have the resource manager to replay tskey's records.  A
# server of the TAP test's cluster (ts_given, below) is only checked: it
# runs, with those options.
ts_start_server() {
	local dir=$1
	shift
	if ts_given "$dir"; then
		ts_given_server "$dir" "$@" || return 1
		export PGHOST=$dir PGUSER=postgres
		return 0
	fi
	chown postgres: "$dir"
	(cd / && runuser -u postgres -- initdb -D "$dir/data" -A trust -E UTF8 --no-locale -U postgres >"$dir/initdb.log" 2>&1) || {
		cat "$dir/initdb.log"
		return 1
	}
	[ "$TS_PRELOAD" = 1 ] && echo "shared_preload_libraries = 'tablestore'" >>"$dir/data/postgresql.conf"
	local opts="-c listen_addresses='' -k $dir -c fsync=off -c max_prepared_transactions=10 $*"
	(cd / && runuser -u postgres -- pg_ctl -D "$dir/data" -l "$dir/server.log" -o "$opts" -w start >/dev/null) || {
		cat "$dir/server.log"
		return 1
	}
	export PGHOST=$dir PGUSER=postgres PGPORT=5432
}

# ts_stop_server DIR: stop the server ts_start_server started in DIR (not
# one the TAP test gave: that test stops it).
ts_stop_server() {
	local dir=$1
	ts_given "$dir" && return 0
	[ -f "$dir/data/postmaster.pid" ] && ts_pg_ctl -D "$dir/data" -m fast -w stop >/dev/null 2>&1
	return 0
}

# ts_pg_ctl ARG...: pg_ctl as the postgres OS user (through runuser when
# root, as run-tests.sh runs; directly when already postgres, as the TAP
# tests run), from /, so that it works whatever the current directory.
ts_pg_ctl() {
	if [ "$(id -u)" = 0 ]; then
		(cd / && runuser -u postgres -- pg_ctl "$@")
	else
		(cd / && pg_ctl "$@")
	fi
}

# The cluster tier's TAP test (test/t/020_cluster.pl) runs each script on
# servers it made and owns (test/perl/TablestoreCluster.pm) and says so in
# the environment: TS_CLUSTER_DIR is the cluster's directory, in which
# each node NAME (router, shard0, ..., and the extra servers the step
# asked for) is a socket directory DIR/NAME, all on port PGPORT as
# ts_start_cluster's servers all are on 5432, with its data directory in
# DIR/NAME/data and its log in DIR/NAME/server.log; TS_CLUSTER_SHAPE is
# "SHARDS PARTITIONS", what the router was configured with.  The functions
# here then take those servers instead of making, or stopping, their own:
# a script runs the same either way.

# ts_cluster_dir PREFIX: the directory of a script's cluster: the TAP
# test's, or a new temporary one.
ts_cluster_dir() {
	if [ -n "${TS_CLUSTER_DIR:-}" ]; then
		echo "$TS_CLUSTER_DIR"
	else
		mktemp -d "/tmp/$1.XXXXXX"
	fi
}

# ts_rm_cluster_dir DIR: remove a script's cluster directory, unless it is
# the TAP test's: a server the script started again (pg_ctl -D DIR/NAME/data)
# runs on its links until the test stops it, and the test removes it then.
ts_rm_cluster_dir() {
	ts_given "$1" || rm -rf "$1"
}

# ts_given DIR: whether DIR is the TAP test's cluster or one of its servers.
ts_given() {
	[ -n "${TS_CLUSTER_DIR:-}" ] || return 1
	case "$1" in
	"$TS_CLUSTER_DIR" | "$TS_CLUSTER_DIR"/*) return 0 ;;
	esac
	return 1
}

# ts_given_server DIR [-c NAME=VALUE...]: the TAP test's server DIR is
# running and has the settings the script would have started it with;
# otherwise say what the step must add (test/t/020_cluster.pl).
ts_given_server() {
	local dir=$1 name value got
	shift
	if ! psql -X -q -At -h "$dir" -d postgres -c "SELECT 1" >/dev/null 2>&1; then
		echo "no server $(basename "$dir") in the TAP test's cluster $TS_CLUSTER_DIR: its step must name it" >&2
		return 1
	fi
	while [ $# -ge 2 ]; do
		if [ "$1" = -c ]; then
			name=${2%%=*} value=${2#*=}
			got=$(psql -X -q -At -h "$dir" -d postgres -c "SELECT current_setting('$name')")
			if [ "$got" != "$value" ]; then
				echo "server $(basename "$dir") of the TAP test has $name = $got, the script wants $value" >&2
				return 1
			fi
		fi
		shift 2
	done
	return 0
}

# ts_start_cluster DIR N [partitions]: a tablestore cluster of throwaway
# servers: N shards (DIR/shard0 ...), each with database tablestore and the
# extension, and a router (DIR/router) with database tablestore, PL/Proxy
# and tablestore_router configured over the shards.  PGHOST is left on the
# router.  The TAP test's cluster (ts_given) is only checked: it has that
# shape.
ts_start_cluster() {
	local dir=$1 n=$2 parts=${3:-16} i nodes=""
	if ts_given "$dir"; then
		if [ "${TS_CLUSTER_SHAPE:-}" != "$n $parts" ]; then
			echo "the TAP test's cluster has (shards partitions) ${TS_CLUSTER_SHAPE:-?}, the script wants $n $parts: fix its step" >&2
			return 1
		fi
		export PGHOST=$dir/router PGDATABASE=tablestore
		return 0
	fi
	chmod 755 "$dir"
	for i in $(seq 0 $((n - 1))); do
		mkdir -p "$dir/shard$i"
		# wal_level = logical: partitions move on logical replication
		ts_start_server "$dir/shard$i" -c wal_level=logical || return 1
		psql -X -q -d postgres -c "CREATE DATABASE tablestore" || return 1
		psql -X -q -d tablestore -c "CREATE EXTENSION tablestore" || return 1
		nodes="$nodes${nodes:+, }'host=$dir/shard$i dbname=tablestore'"
	done
	mkdir -p "$dir/router"
	ts_start_server "$dir/router" || return 1
	psql -X -q -d postgres -c "CREATE DATABASE tablestore" || return 1
	psql -X -q -v ON_ERROR_STOP=1 -d tablestore >/dev/null <<SQL || return 1
CREATE EXTENSION plproxy;
CREATE EXTENSION tablestore_router;
CREATE EXTENSION dblink;
SELECT tablestore_router.configure(ARRAY[$nodes], $parts);
SQL
	export PGHOST=$dir/router PGDATABASE=tablestore
}

# ts_stop_cluster DIR: stop every server of a cluster (not the TAP test's).
ts_stop_cluster() {
	local d
	for d in "$1"/router "$1"/shard*; do
		[ -d "$d" ] && ts_stop_server "$d"
	done
	return 0
}

# ts_cluster_psql DIR SQL...: run SQL on every server of a cluster (roles,
# for instance, are per server).
ts_cluster_psql() {
	local dir=$1 d
	shift
	for d in "$dir"/router "$dir"/shard*; do
		psql -X -q -h "$d" -d tablestore -v ON_ERROR_STOP=1 "$@" || return 1
	done
}

# ts_mask_clock [FILE]: a query's output with the clocks masked as <time>:
# the Timestamp property and the time in an ETag, not other DateTimes
# (outputs of different servers, or runs, differ only there).
ts_mask_clock() {
	sed -E -e 's/("Timestamp": ?")[0-9][^"]*"/\1<time>"/g' \
		-e "s/datetime'[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}%3A[0-9]{2}%3A[0-9]{2}(\.[0-9]+)?Z'/datetime'<time>'/g" "$@"
}

# ts_seed NAME DEFAULT: the seed of a random test.  The environment variable
# NAME repeats a run (NAME=N) or asks for a new one (NAME=random); unset, the
# test uses DEFAULT, so that the test command is deterministic by default.
ts_seed() {
	local v=${!1:-}
	case "$v" in
		"") echo "$2" ;;
		random) echo $(( $(od -An -N4 -tu4 /dev/urandom) % 1000000 )) ;;
		*[!0-9]*) echo "ts_seed: $1 must be a number or 'random'" >&2; echo "$2" ;;
		*) echo "$v" ;;
	esac
}

# ts_until [-t SECONDS] COMMAND...: run COMMAND every 50 ms until it
# succeeds, for at most SECONDS (30 unless given); on timeout say on stderr
# what was awaited and return 1.  Tests wait for a condition this way, never
# for a fixed time that guesses how long the condition takes.
ts_until() {
	local secs=30 end
	if [ "${1:-}" = -t ]; then
		secs=$2
		shift 2
	fi
	end=$((SECONDS + secs))
	until "$@"; do
		if [ "$SECONDS" -ge "$end" ]; then
			echo "timed out after $secs s waiting for: $*" >&2
			return 1
		fi
		sleep 0.05
	done
}

# ts_sql_true SQL [PSQL-OPTION...]: whether the query answers t (on the
# server and database of the options or of the environment).
ts_sql_true() {
	local sql=$1
	shift
	[ "$(psql -X -q -At "$@" -c "$sql" 2>/dev/null)" = t ]
}

# ts_until_sql [-t SECONDS] SQL [PSQL-OPTION...]: until the query answers t
# (a lock granted or awaited, a session gone, a step recorded).
ts_until_sql() {
	local t=()
	if [ "${1:-}" = -t ]; then
		t=(-t "$2")
		shift 2
	fi
	ts_until "${t[@]}" ts_sql_true "$@"
}

# ts_until_file [-t SECONDS] FILE...: until every FILE exists (a concurrent
# session or process says it reached a point by creating a file).
ts_until_file() {
	local t=() f
	if [ "${1:-}" = -t ]; then
		t=(-t "$2")
		shift 2
	fi
	for f in "$@"; do
		ts_until "${t[@]}" test -e "$f" || return 1
	done
}

# ts_run_traced FUNCTION [ARG...]: run FUNCTION in this shell and return its
# status; if that is not 0, TS_FAILED_STEP says where it failed: the line
# and command of FUNCTION itself (not of what it calls or runs in the
# background) that ended it, and for a "return", the last command of
# FUNCTION that exited non-zero before it, with its status and, for a
# pipeline, each member's status.  A
# failed check then explains itself even when every line it printed looks
# like a pass (a pipeline failing on SIGPIPE, 141, say).
TS_FAILED_STEP=
ts_run_traced() {
	local rc
	_ts_fn=$1 _ts_cmd="" _ts_line="" _ts_bad="" _ts_bad_line="" _ts_bad_rc="" _ts_bad_ps=""
	TS_FAILED_STEP=
	set -T
	trap '_ts_step $? "${PIPESTATUS[*]}"' DEBUG
	"$@"
	rc=$?
	trap - DEBUG
	set +T
	if [ "$rc" -ne 0 ]; then
		case "$_ts_cmd" in
		return*)
			TS_FAILED_STEP="$_ts_fn returned $rc at line $_ts_line ($_ts_cmd)"
			[ -z "$_ts_bad" ] ||
				TS_FAILED_STEP="$TS_FAILED_STEP after line $_ts_bad_line: $_ts_bad: exit status $_ts_bad_rc (pipeline: $_ts_bad_ps)"
			;;
		*) TS_FAILED_STEP="$_ts_fn failed at line $_ts_line: $_ts_cmd: exit status $rc" ;;
		esac
	fi
	return "$rc"
}
# _ts_step STATUS PIPESTATUS: ts_run_traced's DEBUG trap, before each command
# of the traced function: the status of the one before, and this one's text
_ts_step() {
	[ "${FUNCNAME[1]:-}" = "$_ts_fn" ] || return 0
	if [ "$1" -ne 0 ]; then
		_ts_bad=$_ts_cmd _ts_bad_line=$_ts_line _ts_bad_rc=$1 _ts_bad_ps=$2
	fi
	_ts_cmd=$BASH_COMMAND _ts_line=${BASH_LINENO[0]}
}

# run as a script: the function named by the arguments
if [ "${BASH_SOURCE[0]}" = "$0" ] && [ $# -gt 0 ]; then
	"$@"
fi
