#!/usr/bin/env bash
# test/gateway/attack_test.sh N: the test of finding N of issue 20 (the
# gateway tried from the outside as an attacker would), each against a
# gateway of its own on a free loopback port, started and stopped here:
#   1   host-style HTTPS under ASan (heap overflow in resolve_account)
#   2   over-long request lines: an answer, and nothing kept (LSan at stop)
#   3   slow headers and connections per client address
#   4   the body of an unauthenticated request is not buffered (RSS)
#   6   the development account's published key off loopback
#   7   one answer for an unknown account and for a bad signature
#   8   accounts are isolated: a database each
#   9   Shared Key signs the method on the wire (X-HTTP-Method)
#   13  strict parsing: $top, framing headers, repeated headers,
#       continuation tokens
#   14  what an outside attack of the fixed gateway found: a SAS that cannot
#       allow a write holds no memory for its body, nor does an announced
#       body that never comes; header names that are not tokens;
#       unknown Transfer-Encodings; a host-style unknown account
#       answered as a known one; malformed percent-encoding; Content-MD5
# "attack_test.sh setup" makes what they need on the server at PGHOST:
# databases gwatk (devstoreaccount1, role gwt_dev) and gwatk_other (account
# other, role gwt_other), and the login role gwt_auth.  run.sh does it once
# and runs each test as a step.
#
# The ASan gateway (GW_BIN_ASAN) serves the tests, except where an exit
# status or the resident size is measured (GW_BIN); each ASan gateway must
# stop with status 0 and no sanitizer report (leaks included).  Logs go to
# GW_WORK if set (run.sh scans them too).  Exit status: failures.
set -u
cd "$(dirname "$0")/../.."
GW_BIN=${GW_BIN:-gateway/tablestore-gateway}
GW_BIN_ASAN=${GW_BIN_ASAN:-gateway/tablestore-gateway-asan}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
export GW_DEV_KEY="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
db="host=$PGHOST port=${PGPORT:-5432} user=gwt_auth"
test_no=${1:?usage: attack_test.sh setup|1|2|3|4|6|7|8|9|13|14}

if [ "$test_no" = setup ]; then
	export PGOPTIONS="-c client_min_messages=warning"
	psql -X -q -v ON_ERROR_STOP=1 -d postgres <<'SQL' || exit 1
DROP DATABASE IF EXISTS gwatk;
DROP DATABASE IF EXISTS gwatk_other;
CREATE DATABASE gwatk;
CREATE DATABASE gwatk_other;
DO $$
DECLARE
	r text;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'gwt_auth') THEN
		CREATE ROLE gwt_auth LOGIN NOINHERIT;
	END IF;
	FOREACH r IN ARRAY ARRAY['gwt_dev', 'gwt_other'] LOOP
		IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN
			EXECUTE format('CREATE ROLE %I NOLOGIN', r);
			EXECUTE format('GRANT %I TO gwt_auth', r);
		END IF;
	END LOOP;
END $$;
SQL
	psql -X -q -v ON_ERROR_STOP=1 -d gwatk -c "CREATE EXTENSION tablestore" \
		-c "GRANT CREATE ON SCHEMA tablestore_data TO gwt_dev" || exit 1
	psql -X -q -v ON_ERROR_STOP=1 -d gwatk_other -c "CREATE EXTENSION tablestore" \
		-c "GRANT CREATE ON SCHEMA tablestore_data TO gwt_other" || exit 1
	exit 0
fi

dir=$(mktemp -d /tmp/gwatk.XXXXXX)
logdir=${GW_WORK:-$dir}
pid=
name=
. test/gateway/lib.sh
trap 'for p in $pid; do kill "$p" 2>/dev/null; done; rm -rf "$tmp" "$dir"' EXIT
J='Content-Type: application/json'
devacct="devstoreaccount1:$GW_DEV_KEY:gwt_dev"

# start NAME BIN ARGS...: a gateway on a free loopback port, in database
# gwatk unless ARGS say otherwise; sets pid, name and lib.sh's port.
start() {
	name=$1
	local bin=$2
	shift 2
	rm -f "$dir/$name.port"
	"$bin" --db "$db dbname=gwatk" --port 0 --port-file "$dir/$name.port" "$@" \
		>"$logdir/attack-$name.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		[ -s "$dir/$name.port" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if [ ! -s "$dir/$name.port" ]; then
		fail=$((fail + 1))
		echo "FAIL gateway $name did not start:"
		tail -n 5 "$logdir/attack-$name.log"
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		pid=
		return 1
	fi
	gw_port "$(cat "$dir/$name.port")"
}

# stop: the gateway stops with exit status 0 (it did not die before) and
# its log has no sanitizer report (a leak included).
stop() {
	[ -n "$pid" ] || return 0
	kill "$pid" 2>/dev/null
	wait "$pid"
	local rc=$?
	pid=
	check "gateway $name alive until the end and stopped cleanly (exit status $rc)" test $rc = 0
	if grep -q -E "Sanitizer|runtime error" "$logdir/attack-$name.log"; then
		fail=$((fail + 1))
		echo "FAIL gateway $name: sanitizer report"
		grep -E -A 12 "ERROR: |runtime error" "$logdir/attack-$name.log" | head -n 30
	else
		pass=$((pass + 1))
		echo "ok   gateway $name: no sanitizer report"
	fi
}

# refused NAME PATTERN ARGS...: the (non-ASan) gateway refuses to start
# with these arguments: exit status 2, and stderr matching PATTERN.
refused() {
	local n=$1 pat=$2 p rc
	shift 2
	"$GW_BIN" --db "$db dbname=gwatk" --port 0 --port-file "$dir/$n.port" "$@" >"$dir/$n.err" 2>&1 &
	p=$!
	for _ in $(seq 100); do
		kill -0 "$p" 2>/dev/null || break
		[ -s "$dir/$n.port" ] && break
		sleep 0.1
	done
	if kill -0 "$p" 2>/dev/null; then
		kill "$p"
		wait "$p"
		fail=$((fail + 1))
		echo "FAIL $n: the gateway started (port $(cat "$dir/$n.port" 2>/dev/null))"
		return
	fi
	wait "$p"
	rc=$?
	if [ $rc = 2 ] && grep -Eqi "$pat" "$dir/$n.err"; then
		pass=$((pass + 1))
		echo "ok   $n: refused: $(head -n 1 "$dir/$n.err")"
	else
		fail=$((fail + 1))
		echo "FAIL $n: exit status $rc (want 2), stderr (want /$pat/):"
		head -n 3 "$dir/$n.err"
	fi
}

# signed_file FILE METHOD PATH HEADERS BODY: a Shared Key Lite signed
# request as raw bytes (HEADERS: extra lines, each ending in \r\n), for
# rawsock; Content-Length is the body's unless HEADERS frame it.
signed_file() {
	local f=$1 m=$2 p=$3 h=$4 body=$5 d
	d=$(now)
	{
		printf '%s %s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nx-ms-date: %s\r\n' "$m" "$p" "$GW_PORT" "$d"
		printf 'Authorization: SharedKeyLite %s:%s\r\n' "$acct" "$(hmac "$d"$'\n'"$(canon "$p")")"
		printf 'Accept: application/json;odata=nometadata\r\nContent-Type: application/json\r\n'
		case "$h" in *Content-Length:* | *Transfer-Encoding:*) ;; *) printf 'Content-Length: %d\r\n' "${#body}" ;; esac
		printf '%b\r\n%s' "$h" "$body"
	} >"$f"
}

# ---- 1: host-style HTTPS, the heap overflow of resolve_account ----
t1() {
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
		-addext "subjectAltName=IP:127.0.0.1,DNS:*.table.tstest" \
		-keyout "$dir/tls.key" -out "$dir/tls.crt" 2>/dev/null
	scheme=https style=host GW_TLS_CA=$dir/tls.crt
	start tls "$GW_BIN_ASAN" --account "$devacct" --tls-cert "$dir/tls.crt" --tls-key "$dir/tls.key" || return
	local ok=0 i d
	for i in $(seq 50); do
		call GET "/$acct/Tables"
		[ "$code" = 200 ] || break
		ok=$((ok + 1))
	done
	check "50 host-style HTTPS requests answered 200 ($ok)" test $ok = 50
	# Host names near the limits of the length the gateway accepts
	for h in "$acct.x" "$acct.$(head -c 200 /dev/zero | tr '\0' a)" "$acct.$(head -c 300 /dev/zero | tr '\0' a)" "$acct.table.tstest:$GW_PORT"; do
		d=$(now)
		rawurl GET "https://$acct.$hostsuffix:$GW_PORT/Tables" -H "Host: $h" -H "x-ms-date: $d" \
			-H "Authorization: SharedKeyLite $acct:$(hmac "$d"$'\n'"/$acct/Tables")"
		check "HTTPS Host of ${#h} bytes answered ($code)" test "$code" != 000
	done
	style=path
	call GET "/$acct/Tables"
	expect "path-style HTTPS still answered" 200
	stop
}

# ---- 2: request lines the HTTP library cannot hold, or over the limits ----
t2() {
	start long "$GW_BIN_ASAN" --account "$devacct" || return
	local q i
	timeout=5
	q=$(seq -f 'a%g=1' 1500 | paste -sd '&')
	for i in 1 2 3 4 5; do
		call GET "/$acct/Tables?$q"
		check "1,500 query arguments (${#q} bytes), try $i: 400 or 414 ($code $err)" test "$code" = 400 -o "$code" = 414
		[ "$code" = 000 ] && break
	done
	call GET "/$acct/Tables?\$filter=$(head -c 17000 /dev/zero | tr '\0' a)"
	check "a 17,000-byte query: 400 or 414 ($code $err)" test "$code" = 400 -o "$code" = 414
	call GET "/$acct/$(head -c 17000 /dev/zero | tr '\0' t)"
	check "a 17,000-byte path: 400 or 414 ($code $err)" test "$code" = 400 -o "$code" = 414
	call GET "/$acct/Tables?$(seq -f 'b%g=1' 33 | paste -sd '&')"
	expect "33 query arguments" 400 InvalidQueryParameterValue
	q=$(seq -f 'X-H%g: v' 3000 | paste -sd $'\n')
	{ printf 'GET /%s/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\n' "$acct"; sed 's/$/\r/' <<<"$q"; printf '\r\n'; } >"$tmp/hdrs"
	rawsock "$tmp/hdrs"
	expect "3,000 headers" 431
	call GET "/$acct/Tables"
	expect "still answers" 200
	stop
}

# ---- 3: slow headers; connections per client address ----
t3() {
	local prog
	# slow PART: part a: four connections each sending a header byte a
	# second from 127.0.0.1, and a signed request every second from there
	# too; part b: ten connections from 127.0.0.1 at once, a signed request
	# from 127.0.0.2 meanwhile
	read -r -d '' prog <<'PY'
import base64, hashlib, hmac, select, socket, sys, time
from email.utils import formatdate

port, key, part = int(sys.argv[1]), base64.b64decode(sys.argv[2]), sys.argv[3]
fails = 0


def check(name, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + name, flush=True)
    fails += 0 if ok else 1


def signed(src="127.0.0.1"):
    """a signed GET of the tables from address src: its status and seconds"""
    d = formatdate(usegmt=True)
    sig = base64.b64encode(hmac.new(key, f"{d}\n/devstoreaccount1/devstoreaccount1/Tables".encode(),
                                    hashlib.sha256).digest()).decode()
    t0 = time.monotonic()
    s = socket.socket()
    s.settimeout(3)
    got = b""
    try:
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(f"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\nx-ms-date: {d}\r\n"
                  f"Authorization: SharedKeyLite devstoreaccount1:{sig}\r\nConnection: close\r\n\r\n".encode())
        while (b := s.recv(65536)):
            got += b
    except OSError:
        pass
    s.close()
    st = got.split(b" ", 2)[1].decode() if got.startswith(b"HTTP/") else "none"
    return st, time.monotonic() - t0


def closed(s):
    """whether the gateway has closed s (EOF or reset waiting)"""
    try:
        return s.recv(4096) == b""
    except (BlockingIOError, socket.timeout):
        return False
    except OSError:
        return True


if part == "a":
    slow, t0 = [], time.monotonic()
    for _ in range(4):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        s.setblocking(False)
        slow.append(s)
    ended = {}
    probes = []
    tick = 0
    while len(ended) < len(slow) and time.monotonic() - t0 < 8:
        tick += 1
        for i, s in enumerate(slow):
            if i not in ended:
                try:
                    s.send(b"a")
                except OSError:
                    ended[i] = time.monotonic() - t0
        probes.append(signed())
        while time.monotonic() - t0 < tick:
            live = [s for i, s in enumerate(slow) if i not in ended]
            r, _, _ = select.select(live, [], [], max(0, tick - (time.monotonic() - t0)))
            for s in r:
                if closed(s):
                    ended[slow.index(s)] = time.monotonic() - t0
    for s in slow:
        s.close()
    times = sorted(round(t, 1) for t in ended.values())
    check(f"4 connections sending a header byte a second closed after 1.5-4.5 s (at {times} s)",
          len(times) == 4 and all(1.5 <= t <= 4.5 for t in times))
    check(f"signed requests from the same address answered meanwhile ({[(p[0], round(p[1], 2)) for p in probes]})",
          all(p[0] == "200" and p[1] < 1.5 for p in probes))
else:
    held = []
    for _ in range(10):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /devstoreaccount1/Tables HTTP/1.1\r\n")
        held.append(s)
    for s in held:
        s.settimeout(0.1)
    shut, t0 = set(), time.monotonic()
    while time.monotonic() - t0 < 1 and len(shut) < len(held):
        r, _, _ = select.select([s for s in held if s not in shut], [], [], max(0, 1 - (time.monotonic() - t0)))
        shut |= {s for s in r if closed(s)}
    check(f"10 connections from 127.0.0.1: 2 closed within 1 s ({len(shut)})", len(shut) == 2)
    st, secs = signed("127.0.0.2")
    check(f"meanwhile a signed request from 127.0.0.2 answered ({st}, {secs:.2f} s)", st == "200")
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(1)
    check("one more from 127.0.0.1 closed at once", closed(s))
    s.close()
    for s in held:
        s.close()
    # the gateway sees the closes when it next polls them: a refused
    # connection before that is no failure (at most 2 s)
    t0 = time.monotonic()
    while True:
        st, secs = signed()
        if st == "200" or time.monotonic() - t0 > 2:
            break
        time.sleep(0.1)
    check(f"once they are closed, a signed request from 127.0.0.1 answered ({st}, "
          f"{time.monotonic() - t0:.2f} s after)", st == "200")
sys.exit(fails)
PY
	start slow "$GW_BIN_ASAN" --account "$devacct" --header-timeout 2 --max-connections-per-ip 8 || return
	$py -c "$prog" "$GW_PORT" "$GW_DEV_KEY" a
	fail=$((fail + $?))
	stop
	# the same limit with time to spare before the header timeout
	start perip "$GW_BIN_ASAN" --account "$devacct" --header-timeout 10 --max-connections-per-ip 8 || return
	$py -c "$prog" "$GW_PORT" "$GW_DEV_KEY" b
	fail=$((fail + $?))
	stop
}

# ---- 4: no body buffered before authentication ----
t4() {
	start rss "$GW_BIN" --account "$devacct" || return
	local before after
	for _ in 1 2 3; do call GET "/$acct/Tables"; done
	before=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status")
	$py - "$GW_PORT" <<'PY'
import socket, sys, threading

port = int(sys.argv[1])
size = 4 * 1024 * 1024
body = b"x" * size
status = []


def one():
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    got = b""
    try:
        s.sendall(b"POST /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size)
        s.sendall(body)
    except OSError:
        pass
    try:
        while (b := s.recv(65536)):
            got += b
    except OSError:
        pass
    s.close()
    status.append(got.split(b" ", 2)[1].decode() if got.startswith(b"HTTP/") else "none")


ts = [threading.Thread(target=one) for _ in range(20)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print(" ".join(sorted(status)))
sys.exit(0 if status == ["403"] * 20 else 1)
PY
	check "20 unauthenticated 4 MiB bodies: 403 each" test $? = 0
	after=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status")
	check "peak resident size grew by $(((after - before) / 1024)) MiB (< 20 MiB; 20 bodies are 80 MiB)" \
		test $((after - before)) -lt $((20 * 1024))
	call GET "/$acct/Tables"
	expect "still answers" 200
	stop
}

# ---- 6: the published development key only on loopback ----
t6() {
	printf 'devstoreaccount1 %s gwt_dev\n' "$GW_DEV_KEY" >"$dir/devfile"
	refused "dev key from --account on 0.0.0.0" 'key.*public|public.*key' --account "$devacct" --listen 0.0.0.0
	refused "dev key from an accounts file on 0.0.0.0" 'key.*public|public.*key' --accounts-file "$dir/devfile" --listen 0.0.0.0
	refused "dev key under another name on 0.0.0.0" 'key.*public|public.*key' --account "someone:$GW_DEV_KEY:gwt_dev" --listen 0.0.0.0
	refused "--dev-account on 0.0.0.0" 'key.*public|public.*key' --dev-account --listen 0.0.0.0
	refused "no account (the default) on 0.0.0.0" 'key.*public|public.*key' --listen 0.0.0.0
	start loopback "$GW_BIN" --accounts-file "$dir/devfile" --listen 127.0.0.1 || return
	check "the dev key on loopback starts" true
	stop
	start anyaddr "$GW_BIN" --account "devstoreaccount1:$(openssl rand -base64 64 | tr -d '\n'):gwt_dev" --listen 0.0.0.0 || return
	check "another key on 0.0.0.0 starts" true
	stop
}

# ---- 7: an unknown account and a wrong signature answer alike ----
t7() {
	start probe "$GW_BIN_ASAN" --account "$devacct" || return
	local d other_key n=0
	other_key=$(openssl rand -base64 64 | tr -d '\n')
	# answer FILE: status, error code, Content-Type and body, without the
	# request id and time
	answer() {
		{
			echo "$code $err"
			grep -i '^Content-Type:' "$tmp/hdr" | tr -d '\r'
			sed -E 's/RequestId:[0-9a-fA-F-]+//; s/Time:[0-9T:.Z-]+//' "$tmp/body"
		} >"$1"
	}
	for path in "/Tables" "/Tables('t7')" "/t7()" "/t7(PartitionKey='a',RowKey='b')" "/?restype=service&comp=properties"; do
		n=$((n + 1))
		acct=nosuchaccount
		keyhex=$(printf '%s' "$other_key" | base64 -d | od -An -tx1 -v | tr -d ' \n')
		call GET "/$acct$path"
		answer "$tmp/unknown$n"
		acct=devstoreaccount1
		call GET "/$acct$path"
		answer "$tmp/wrong$n"
		as_account devstoreaccount1 "$GW_DEV_KEY"
		if cmp -s "$tmp/unknown$n" "$tmp/wrong$n" && grep -q '^403 AuthenticationFailed$' "$tmp/wrong$n"; then
			pass=$((pass + 1))
			echo "ok   GET $path: unknown account and wrong key answered alike (403 AuthenticationFailed)"
		else
			fail=$((fail + 1))
			echo "FAIL GET $path: unknown account and wrong key answered differently:"
			diff "$tmp/unknown$n" "$tmp/wrong$n" | head -n 10
		fi
	done
	# a SAS: unknown account, and a known one with a signature of another key
	se=$(date -u -d '+1 hour' '+%Y-%m-%dT%H:%M:%SZ' | sed 's/:/%3A/g')
	raw GET "/nosuchaccount/t7()?sv=2019-02-02&tn=t7&sp=r&se=$se&sig=AAAA"
	answer "$tmp/sas1"
	raw GET "/$acct/t7()?sv=2019-02-02&tn=t7&sp=r&se=$se&sig=AAAA"
	answer "$tmp/sas2"
	cmp -s "$tmp/sas1" "$tmp/sas2" || diff "$tmp/sas1" "$tmp/sas2" | head -n 6
	check "SAS: unknown account and wrong signature answered alike" cmp -s "$tmp/sas1" "$tmp/sas2"
	stop
}

# ---- 8: accounts are isolated ----
t8() {
	local other_key
	other_key=$(openssl rand -base64 64 | tr -d '\n')
	cat >"$dir/accounts" <<EOF
devstoreaccount1 $GW_DEV_KEY gwt_dev
other $other_key gwt_other gwatk_other
EOF
	start iso "$GW_BIN_ASAN" --accounts-file "$dir/accounts" || return
	call POST "/$acct/Tables" -H "$J" --data '{"TableName":"IsoTable"}'
	expect "devstoreaccount1 creates IsoTable" 201
	call POST "/$acct/IsoTable" -H "$J" --data '{"PartitionKey":"p","RowKey":"1","owner":"dev"}'
	expect "and an entity in it" 201
	as_account other "$other_key"
	call GET "/$acct/Tables"
	expect "other lists its tables" 200
	check "other does not see IsoTable" bash -c "! grep -qi isotable '$tmp/body'"
	call GET "/$acct/Tables('IsoTable')"
	local a1="$code $err"
	call GET "/$acct/Tables('NeverMade')"
	check "other: IsoTable as absent as a table never made ($a1 / $code $err)" test "$a1" = "$code $err" -a "$code" = 404
	call GET "/$acct/IsoTable(PartitionKey='p',RowKey='1')"
	a1="$code $err"
	call GET "/$acct/NeverMade(PartitionKey='p',RowKey='1')"
	check "other: reading IsoTable's entity as for a table never made ($a1 / $code $err)" test "$a1" = "$code $err" -a "$code" = 404
	call POST "/$acct/IsoTable" -H "$J" --data '{"PartitionKey":"p","RowKey":"2"}'
	expect "other cannot insert into IsoTable" 404
	call DELETE "/$acct/Tables('IsoTable')"
	expect "other cannot delete IsoTable" 404
	call POST "/$acct/Tables" -H "$J" --data '{"TableName":"IsoTable"}'
	expect "other creates a table IsoTable of its own" 201
	call POST "/$acct/IsoTable" -H "$J" --data '{"PartitionKey":"p","RowKey":"1","owner":"other"}'
	expect "other inserts the same key there" 201
	call POST "/$acct/Tables" -H "$J" --data '{"TableName":"SquatName"}'
	expect "other creates SquatName" 201
	call GET "/$acct/Tables"
	check "other lists exactly its two tables" test "$(grep -o '"TableName": *"[^"]*"' "$tmp/body" | tr -d ' "' | sort | tr '\n' ' ')" = "TableName:IsoTable TableName:SquatName "
	as_account devstoreaccount1 "$GW_DEV_KEY"
	call POST "/$acct/Tables" -H "$J" --data '{"TableName":"squatname"}'
	expect "devstoreaccount1 creates squatname all the same" 201
	call GET "/$acct/IsoTable(PartitionKey='p',RowKey='1')"
	check "devstoreaccount1's entity is its own" grep -q '"owner": *"dev"' "$tmp/body"
	call GET "/$acct/IsoTable()"
	check "devstoreaccount1's IsoTable holds only its entity" test "$(grep -o '"RowKey"' "$tmp/body" | wc -l)" = 1
	as_account other "$other_key"
	call GET "/$acct/IsoTable(PartitionKey='p',RowKey='1')"
	check "other's entity is its own" grep -q '"owner": *"other"' "$tmp/body"
	as_account devstoreaccount1 "$GW_DEV_KEY"
	stop
	# two accounts must not share a database
	refused "two accounts naming the same database" 'share' \
		--account "a1:$other_key:gwt_dev:gwatk_other" --account "a2:$other_key:gwt_other:gwatk_other"
	printf 'a1 %s gwt_dev\na2 %s gwt_other gwatk\n' "$other_key" "$other_key" >"$dir/shared"
	refused "an account naming --db's database besides one without" 'share' --accounts-file "$dir/shared"
}

# ---- 9: Shared Key over the method on the wire ----
t9() {
	start xmethod "$GW_BIN_ASAN" --account "$devacct" || return
	call POST "/$acct/Tables" -H "$J" --data '{"TableName":"xmethod"}'
	call POST "/$acct/xmethod" -H "$J" --data '{"PartitionKey":"p","RowKey":"1","a":1}'
	expect "insert" 201
	local p="/$acct/xmethod(PartitionKey='p',RowKey='1')" d
	# sk VERB: a Shared Key (not Lite) signature over VERB
	sk() { hmac "$1"$'\n\n'"application/json"$'\n'"$d"$'\n'"$(canon "$p")"; }
	d=$(now)
	raw POST "$p" -H "$J" -H "x-ms-date: $d" -H "X-HTTP-Method: MERGE" -H "If-Match: *" \
		-H "Authorization: SharedKey $acct:$(sk POST)" --data '{"b":2}'
	expect "POST + X-HTTP-Method: MERGE signed over POST" 204
	call GET "$p"
	check "merged: a and b" grep -q '"a": *1.*"b": *2\|"b": *2.*"a": *1' "$tmp/body"
	raw POST "$p" -H "$J" -H "x-ms-date: $d" -H "X-HTTP-Method: MERGE" -H "If-Match: *" \
		-H "Authorization: SharedKey $acct:$(sk MERGE)" --data '{"c":3}'
	expect "the same signed over MERGE" 403 AuthenticationFailed
	raw POST "$p" -H "$J" -H "x-ms-date: $d" -H "X-HTTP-Method: PUT" -H "If-Match: *" \
		-H "Authorization: SharedKey $acct:$(sk POST)" --data '{"r":4}'
	expect "POST + X-HTTP-Method: PUT signed over POST" 204
	call GET "$p"
	check "replaced: r only" bash -c "grep -q '\"r\": *4' '$tmp/body' && ! grep -q '\"a\": *1' '$tmp/body'"
	raw POST "$p" -H "$J" -H "x-ms-date: $d" -H "X-HTTP-Method: DELETE" -H "If-Match: *" \
		-H "Authorization: SharedKey $acct:$(sk DELETE)"
	expect "POST + X-HTTP-Method: DELETE signed over DELETE" 403 AuthenticationFailed
	call GET "$p"
	expect "not deleted" 200
	stop
}

# ---- 13: one meaning per byte sequence ----
t13() {
	start strict "$GW_BIN_ASAN" --account "$devacct" || return
	local v e tok h1 h2
	call POST "/$acct/Tables" -H "$J" --data '{"TableName":"strict"}'
	for i in 1 2 3 4 5; do
		call POST "/$acct/strict" -H "$J" --data "{\"PartitionKey\":\"p\",\"RowKey\":\"$i\"}"
	done
	expect "five entities" 201
	for v in '%205' '%2B5' '+5' '5%20' '-5' '5.0'; do
		call GET "/$acct/strict()?\$top=$v"
		check "\$top=$v: 400 ($code $err)" test "$code" = 400 -a \( "$err" = InvalidQueryParameterValue -o "$err" = InvalidInput \)
	done
	call GET "/$acct/strict()?\$top=05"
	expect "\$top=05 is 5" 200
	e='{"PartitionKey":"f","RowKey":"1"}'
	signed_file "$tmp/r" POST "/$acct/strict" "Content-Length: ${#e}\r\nContent-Length: $((${#e} + 4))\r\n" "$e"
	rawsock "$tmp/r"
	check "two different Content-Length: 400, closed ($code $sockend)" test "$code" = 400 -a "$sockend" = closed
	signed_file "$tmp/r" POST "/$acct/strict" "Content-Length: ${#e}\r\nContent-Length: ${#e}\r\n" "$e"
	rawsock "$tmp/r"
	check "two equal Content-Length: 400, closed ($code $sockend)" test "$code" = 400 -a "$sockend" = closed
	signed_file "$tmp/r" POST "/$acct/strict" "Content-Length: +${#e}\r\n" "$e"
	rawsock "$tmp/r"
	check "Content-Length +N: 400, closed ($code $sockend)" test "$code" = 400 -a "$sockend" = closed
	signed_file "$tmp/r" POST "/$acct/strict" "Transfer-Encoding: chunked\r\nContent-Length: $((${#e} + 7))\r\n" ""
	printf '%x\r\n%s\r\n0\r\n\r\n' "${#e}" "$e" >>"$tmp/r"
	rawsock "$tmp/r"
	check "Transfer-Encoding and Content-Length: 400, closed ($code $sockend)" test "$code" = 400 -a "$sockend" = closed
	call GET "/$acct/strict(PartitionKey='f',RowKey='1')"
	expect "none of them inserted" 404
	# each header the gateway reads, twice with the same value: those the
	# request has, and others added twice
	signed_file "$tmp/r" GET "/$acct/Tables" "Connection: close\r\n" ""
	for h in Authorization x-ms-date Host Content-Type "Date: $(now)" "Content-MD5: 1B2M2Y8AsgTpgAmY7PhCfg==" \
		"If-Match: *" "X-HTTP-Method: MERGE" "x-ms-version: 2019-02-02" \
		"x-ms-client-request-id: abc"; do
		case $h in
			*:*) awk -v h="$h" '!done && $0 == "\r" { print h "\r"; print h "\r"; done = 1 } { print }' "$tmp/r" >"$tmp/r2" ;;
			*) sed "/^$h:/I{p}" "$tmp/r" >"$tmp/r2" ;;
		esac
		rawsock "$tmp/r2"
		expect "${h%%:*} twice" 400 InvalidHeaderValue
	done
	# Accept and Prefer are lists, which HTTP lets a client split over
	# several header lines: read whole (the README's decision), not refused
	awk '!done && $0 == "\r" { print "Accept: application/atom+xml\r"; print "Accept: application/json;odata=nometadata\r"; done = 1 } { print }' "$tmp/r" >"$tmp/r2"
	rawsock "$tmp/r2"
	expect "Accept split over two lines: read as one list" 200
	check "the list's JSON level applies" bash -c "! grep -q odata.metadata '$tmp/body'"
	rawsock "$tmp/r"
	expect "the same request with each header once" 200
	# continuation tokens: issued ones page, others are refused
	local pages="" q="" np nr
	for i in 1 2 3 4; do
		call GET "/$acct/strict()?\$filter=PartitionKey%20eq%20'p'&\$top=2$q"
		[ "$code" = 200 ] || break
		pages="$pages$(grep -o '"RowKey": *"' "$tmp/body" | wc -l)"
		np=$(grep -i '^x-ms-continuation-NextPartitionKey:' "$tmp/hdr" | cut -d' ' -f2 | tr -d '\r')
		nr=$(grep -i '^x-ms-continuation-NextRowKey:' "$tmp/hdr" | cut -d' ' -f2 | tr -d '\r')
		[ -n "$np" ] || break
		[ $i = 1 ] && { h1=$np; h2=$nr; }
		q="&NextPartitionKey=$(enc "$np")&NextRowKey=$(enc "$nr")"
	done
	check "issued tokens page 2, 2, 1 ($pages)" test "$pages" = 221
	call GET "/$acct/strict()?\$top=2&NextPartitionKey=$(enc "$h1")&NextRowKey=$(enc "$h2")"
	expect "an issued token again" 200
	tok="1!$(printf p | base64)"
	call GET "/$acct/strict()?\$top=2&NextPartitionKey=$(enc "$tok")&NextRowKey=$(enc "1!$(printf 4 | base64)")"
	expect "a forged token (1! and base64 of a chosen key)" 400 InvalidInput
	call GET "/$acct/strict()?\$top=2&NextPartitionKey=$(enc "$h1")&NextRowKey=$(enc "1!$(printf 4 | base64)")"
	expect "an issued partition token with a forged row token" 400 InvalidInput
	# one character of the issued token changed (base64 still)
	v=${h1:2:1}
	[ "$v" = d ] && v=e || v=d
	call GET "/$acct/strict()?\$top=2&NextPartitionKey=$(enc "${h1:0:2}$v${h1:3}")&NextRowKey=$(enc "$h2")"
	expect "an altered issued token" 400 InvalidInput
	call GET "/$acct/Tables?NextTableName=$(enc "1!$(printf strict | base64)")"
	expect "a forged NextTableName" 400 InvalidInput
	stop
}
enc() { printf '%s' "$1" | sed 's/%/%25/g; s/+/%2B/g; s/\//%2F/g; s/=/%3D/g; s/:/%3A/g; s/!/%21/g'; }

# hold N SRC HEAD: N connections from source address SRC that send HEAD (a
# request's line and headers) and then nothing; their pids in $holders
holders=
hold() {
	local n=$1 src=$2 head=$3
	$py -c '
import socket, sys, time
n, src, port, head = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
socks = []
for i in range(n):
    s = socket.socket(); s.bind((src, 0)); s.connect(("127.0.0.1", port))
    s.sendall(head.replace("\\r\\n", "\r\n").encode()); socks.append(s)
print("held", flush=True)
time.sleep(30)  # holds the connections until killed (30 s: a bound)
' "$n" "$src" "$GW_PORT" "$head" >"$dir/hold.$src" 2>&1 &
	holders="$holders $!"
	for _ in $(seq 50); do grep -q held "$dir/hold.$src" && break; sleep 0.1; done
}

t14() {
	local other_key se sig q d
	other_key=$(openssl rand -base64 64 | tr -d '\n')
	printf 'devstoreaccount1 %s gwt_dev\nother %s gwt_other gwatk_other\n' "$GW_DEV_KEY" "$other_key" >"$dir/accounts"
	# a budget of 16 MiB: four announced 4 MiB bodies would have taken it all
	start outside "$GW_BIN_ASAN" --accounts-file "$dir/accounts" --memory-budget 16 || return
	as_account other "$other_key"
	call POST "/$acct/Tables" -H "$J" --data '{"TableName":"victim"}'
	expect "other makes a table" 201
	as_account devstoreaccount1 "$GW_DEV_KEY"
	call POST "/$acct/Tables" -H "$J" --data '{"TableName":"sastab"}'
	expect "devstoreaccount1 makes a table" 201
	# a batch holds about twice its body besides it (its parts' copies, its
	# operations): charged, so a 1.5 MiB batch is over one address's quarter
	# (4 MiB) of the budget, a 0.5 MiB one is not (the attack on the batch
	# answers, finding 5)
	local kib
	for kib in 512 1536; do
		python3 -c 'import sys
pad = "x" * (int(sys.argv[1]) * 1024)
sys.stdout.write("--batch_m\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
    "GET http://x/devstoreaccount1/sastab(PartitionKey=%27p%27,RowKey=%27m%27) HTTP/1.1\r\n"
    "Accept: application/json\r\nX-Pad: " + pad + "\r\n\r\n\r\n--batch_m--\r\n")' "$kib" >"$tmp/bm"
		call POST "/$acct/\$batch" -H "Content-Type: multipart/mixed; boundary=batch_m" --data-binary @"$tmp/bm"
		if [ "$kib" = 512 ]; then
			expect "a 0.5 MiB batch within the budget" 202
		else
			expect "a 1.5 MiB batch: what it holds is charged, over the address's share" 503 ServerBusy
		fi
	done
	# a read-only table SAS announcing 4 MiB bodies on 8 connections: refused
	# from its headers (the SAS cannot allow an insert), nothing charged
	se=$(date -u -d '+1 hour' '+%Y-%m-%dT%H:%M:%SZ')
	sig=$(hmac "r"$'\n\n'"$se"$'\n'"/table/$acct/sastab"$'\n\n\n\n'"2019-02-02"$'\n\n\n\n' | sed 's/+/%2B/g; s/\//%2F/g; s/=/%3D/g')
	q="sv=2019-02-02&tn=sastab&sp=r&se=$(sed 's/:/%3A/g' <<<"$se")&sig=$sig"
	hold 8 127.0.0.3 "POST /$acct/sastab?$q HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4194304\r\n\r\n"
	raw POST "/$acct/sastab?$q" -H "$J" -H "Expect: 100-continue" --data '{"PartitionKey":"p","RowKey":"1"}'
	expect "a read-only SAS's insert: refused from its headers" 403 AuthorizationPermissionMismatch
	# signed requests that announce 4 MiB and send nothing: nothing charged
	d=$(now)
	hold 8 127.0.0.4 "POST /$acct/sastab HTTP/1.1\r\nHost: x\r\nx-ms-date: $d\r\nAuthorization: SharedKeyLite $acct:$(hmac "$d"$'\n'"/$acct/$acct/sastab")\r\nContent-Type: application/json\r\nContent-Length: 4194304\r\n\r\n"
	as_account other "$other_key"
	call GET "/$acct/victim()"
	expect "another account's query while 16 bodies are announced and never sent" 200
	call POST "/$acct/victim" -H "$J" --data '{"PartitionKey":"a","RowKey":"w"}'
	expect "and its insert" 201
	for p in $holders; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	holders=
	as_account devstoreaccount1 "$GW_DEV_KEY"
	# framing: header names with a blank before the colon, an unknown
	# Transfer-Encoding (a NUL in a value cannot be seen: libmicrohttpd ends
	# the value there, README)
	local e='{"PartitionKey":"f","RowKey":"2"}'
	signed_file "$tmp/r" POST "/$acct/sastab" "Content-Length : ${#e}\r\n" "$e"
	rawsock "$tmp/r"
	check "'Content-Length :' (a blank before the colon): 400, closed ($code $sockend)" test "$code" = 400 -a "$sockend" = closed
	signed_file "$tmp/r" POST "/$acct/sastab" "Transfer-Encoding\t: chunked\r\n" "$e"
	rawsock "$tmp/r"
	check "'Transfer-Encoding<TAB>:': 400, closed ($code $sockend)" test "$code" = 400 -a "$sockend" = closed
	signed_file "$tmp/r" POST "/$acct/sastab" "Transfer-Encoding: gzip\r\n" "$e"
	rawsock "$tmp/r"
	check "Transfer-Encoding gzip: 501, closed ($code $sockend)" test "$code" = 501 -a "$sockend" = closed
	call GET "/$acct/sastab(PartitionKey='f',RowKey='2')"
	expect "none of them inserted" 404
	# an unknown account host-style gets what a known one with a wrong key gets
	local known unknown
	raw GET "/Tables" -H "Host: $acct.table.tstest" -H "x-ms-date: $(now)" -H "Authorization: SharedKeyLite $acct:AAAA"
	known="$code $err $(grep -i '^Content-Type:' "$tmp/hdr" | tr -d '\r')"
	raw GET "/Tables" -H "Host: nosuchacct.table.tstest" -H "x-ms-date: $(now)" -H "Authorization: SharedKeyLite nosuchacct:AAAA"
	unknown="$code $err $(grep -i '^Content-Type:' "$tmp/hdr" | tr -d '\r')"
	check "host-style: unknown and known account answered alike ($known / $unknown)" test "$known" = "$unknown"
	# malformed percent-encoding is a 400, not literal text
	call PUT "/$acct/sastab(PartitionKey='p',RowKey='a%zz')" -H "$J" --data '{"v":1}'
	expect "a '%' without two hex digits in the path" 400 InvalidUri
	call GET "/$acct/sastab()?\$filter=RowKey%20eq%20'a%zz'"
	expect "and in a query parameter" 400 InvalidQueryParameterValue
	# Content-MD5 is checked against the body
	call POST "/$acct/sastab" -H "$J" -H "Content-MD5: $(printf '%s' '{"PartitionKey":"m","RowKey":"1"}' | openssl dgst -md5 -binary | base64)" \
		--data '{"PartitionKey":"m","RowKey":"1"}'
	expect "a body that matches its Content-MD5" 201
	call POST "/$acct/sastab" -H "$J" -H "Content-MD5: $(printf 'other' | openssl dgst -md5 -binary | base64)" \
		--data '{"PartitionKey":"m","RowKey":"2"}'
	expect "a body that does not" 400 Md5Mismatch
	stop
}

case "$test_no" in
	1 | 2 | 3 | 4 | 6 | 7 | 8 | 9 | 13 | 14) "t$test_no" ;;
	*) echo "no test $test_no"; exit 2 ;;
esac
echo "$pass passed, $fail failed"
exit $fail
