# test/gateway/lib.sh: helpers of the raw HTTP tests (sourced): Shared Key
# Lite signing and requests (from a helper Python process; openssl and
# curl in background jobs), raw bytes over a socket, and checks that count
# passes and failures.  Needs GW_PORT and GW_DEV_KEY.
#
# The same requests go out in any of four ways:
#   GW_SCHEME   http (default) or https (then GW_TLS_CA: the certificate
#               the gateway's is checked against)
#   GW_STYLE    path (default): http://127.0.0.1:PORT/<account>/<path>, or
#               host: http://<account>.table.tstest:PORT/<path>, connected
#               to 127.0.0.1 (the name is never looked up)
# Tests write paths path-style ("/$acct/Tables"); url, canon and aurl turn
# them into this run's URL, canonicalized resource and account base URL.
scheme=${GW_SCHEME:-http}
style=${GW_STYLE:-path}
hostsuffix=table.tstest

# gw_port PORT: address the gateway on this port from now on
gw_port() {
	GW_PORT=$1
	base=$scheme://127.0.0.1:$GW_PORT
	curlopts=(--connect-to "::127.0.0.1:$GW_PORT")
	if [ "$scheme" = https ]; then
		curlopts+=(--cacert "$GW_TLS_CA")
	fi
}
gw_port "${GW_PORT:-0}"
acct=devstoreaccount1
keyhex=$(printf '%s' "$GW_DEV_KEY" | base64 -d | od -An -tx1 -v | tr -d ' \n')
fail=0
pass=0
tmp=$(mktemp -d /tmp/gwhttp.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

py=/usr/bin/python3

# One Python process that stays signs and sends the requests (an openssl
# and a curl process per request cost 0.2 s on a busy machine: 20 s a run of
# http_test.sh).  A job in the background would share its pipe: it must
# `unset sign_in` first, to sign with openssl and send with curl.
read -r -d '' helper_py <<'PY'
# the helper process of lib.sh: one request per line on stdin, one answer
# line on stdout.
#   S KEYHEX STRING   base64 HMAC-SHA256 of STRING (\\ and \n escaped)
#   R METHOD URL BODYFILE OUTDIR TIMEOUT CA HEADER...  (tab-separated)
#                     an HTTP request on a new connection to 127.0.0.1 at
#                     URL's port (BODYFILE "-": no body; CA "-": plain HTTP,
#                     else TLS checked against CA for URL's host); Host is
#                     URL's host unless a HEADER gives it; answer "STATUS"
#                     (000: none), the response's head in OUTDIR/hdr and its
#                     body in OUTDIR/body
import base64, hashlib, hmac, re, socket, ssl, sys, urllib.parse


def unescape(m):
    return re.sub(rb"\\(.)", lambda x: b"\n" if x.group(1) == b"n" else x.group(1), m)


def recv_response(s, method):
    """the response's head (bytes) and body, or None if there is none"""
    buf = b""
    while b"\r\n\r\n" not in buf:
        b = s.recv(65536)
        if not b:
            return None
        buf += b
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    if status == 100:			# an interim answer: the real one follows
        return recv_response(_Prefixed(s, rest), method)
    hdrs = {}
    for h in lines[1:]:
        k, _, v = h.partition(b":")
        hdrs[k.strip().lower()] = v.strip()
    body = rest
    if method == "HEAD" or status in (204, 304):
        return head, b""
    if hdrs.get(b"transfer-encoding", b"").lower() == b"chunked":
        out = b""
        while True:
            while b"\r\n" not in body:
                b = s.recv(65536)
                if not b:
                    return head, out
                body += b
            size, _, body = body.partition(b"\r\n")
            n = int(size.split(b";")[0], 16)
            while len(body) < n + 2:
                b = s.recv(65536)
                if not b:
                    return head, out + body[:n]
                body += b
            if n == 0:
                return head, out
            out += body[:n]
            body = body[n + 2:]
    if b"content-length" in hdrs:
        n = int(hdrs[b"content-length"])
        while len(body) < n:
            b = s.recv(65536)
            if not b:
                break
            body += b
        return head, body[:n]
    while True:
        b = s.recv(65536)
        if not b:
            return head, body
        body += b


class _Prefixed:
    """a socket whose first recv returns bytes already read"""
    def __init__(self, s, first):
        self.s, self.first = s, first

    def recv(self, n):
        if self.first:
            b, self.first = self.first, b""
            return b
        return self.s.recv(n)


def request(method, url, bodyfile, timeout, ca, headers):
    u = urllib.parse.urlsplit(url)
    target = url[url.index("/", len(u.scheme) + 3):] if "/" in url[len(u.scheme) + 3:] else "/"
    names = {h.split(":", 1)[0].strip().lower() for h in headers}
    lines = [f"{method} {target} HTTP/1.1"]
    if "host" not in names:
        lines.append(f"Host: {u.netloc}")
    lines.append("User-Agent: tablestore-gateway-tests")
    lines += headers
    body = open(bodyfile, "rb").read() if bodyfile != "-" else None
    chunked = any(h.lower().replace(" ", "") == "transfer-encoding:chunked" for h in headers)
    if body is not None and not chunked:
        if "content-type" not in names:
            lines.append("Content-Type: application/x-www-form-urlencoded")
        lines.append(f"Content-Length: {len(body)}")
    data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "surrogateescape")
    if chunked:
        for i in range(0, len(body or b""), 65536):
            c = body[i:i + 65536]
            data += b"%x\r\n%s\r\n" % (len(c), c)
        data += b"0\r\n\r\n"
    elif body:
        data += body
    s = socket.create_connection(("127.0.0.1", u.port), timeout=timeout)
    try:
        if ca != "-":
            s = ssl.create_default_context(cafile=ca).wrap_socket(s, server_hostname=u.hostname)
        try:
            s.sendall(data)
        except OSError:
            pass			# answered before the body was in: read the answer
        return recv_response(s, method)
    except (OSError, ValueError, IndexError):
        return None
    finally:
        s.close()


for line in sys.stdin.buffer:
    line = line.rstrip(b"\n")
    if line.startswith(b"S "):
        k, _, m = line[2:].partition(b" ")
        out = base64.b64encode(hmac.new(bytes.fromhex(k.decode()), unescape(m), hashlib.sha256).digest()).decode()
    else:
        f = line[2:].decode("utf-8", "surrogateescape").split("\t")
        method, url, bodyfile, outdir, timeout, ca = f[:6]
        try:
            r = request(method, url, bodyfile, float(timeout), ca, [h for h in f[6:] if h])
        except OSError:
            r = None
        head, body = r if r else (b"", b"")
        with open(outdir + "/hdr", "wb") as h:
            h.write(head + b"\r\n\r\n" if r else b"")
        with open(outdir + "/body", "wb") as h:
            h.write(body)
        out = head.split(b" ", 2)[1].decode() if r else "000"
    sys.stdout.write(out + "\n")
    sys.stdout.flush()
PY
coproc HELPER { exec $py -c "$helper_py"; }
exec {sign_in}>&"${HELPER[1]}" {sign_out}<&"${HELPER[0]}"
timeout=60

# _hmac STRING: its signature under $keyhex, base64, in $sig (no subshell:
# a process costs on a busy machine); hmac STRING prints it.
_hmac() {
	if [ -z "${sign_in:-}" ]; then
		sig=$(printf '%s' "$1" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$keyhex" -binary | base64 -w0)
		return
	fi
	local m=${1//\\/\\\\}
	m=${m//$'\n'/\\n}
	printf 'S %s %s\n' "$keyhex" "$m" >&"$sign_in"
	IFS= read -r sig <&"$sign_out"
}
hmac() {
	local sig
	_hmac "$1"
	printf '%s' "$sig"
}
# _now: the date of a request in $d; now prints it
_now() { TZ=UTC0 LC_ALL=C printf -v d '%(%a, %d %b %Y %H:%M:%S GMT)T' -1; }
now() {
	local d
	_now
	printf '%s\n' "$d"
}

# _url PATH: the URL of the path-style PATH (/<account>[/rest][?query]) in
# this run's style, in $u; host-style moves the account segment into the
# host.  url PATH prints it.
_url() {
	local p=$1 a rest
	if [ "$style" = host ]; then
		a=${p#/}
		a=${a%%[/?]*}
		rest=${p#/"$a"}
		[ "${rest:0:1}" = / ] || rest=/$rest
		u=$scheme://$a.$hostsuffix:$GW_PORT$rest
	else
		u=$base$p
	fi
}
url() {
	local u
	_url "$1"
	printf '%s\n' "$u"
}

# aurl [ACCOUNT]: the account's base URL as the gateway writes it in its
# answers (Location, odata.metadata, odata.id).
aurl() {
	if [ "$style" = host ]; then
		printf '%s\n' "$scheme://${1:-$acct}.$hostsuffix:$GW_PORT"
	else
		printf '%s\n' "$base/${1:-$acct}"
	fi
}

# _canon PATH: the canonicalized resource Shared Key signs for PATH, in
# $res: the account, then the path as sent (host-style: without the account
# segment), then ?comp= if there is one.  canon PATH prints it.
_canon() {
	local u re='[?&]comp=([^&]*)'
	_url "$1"
	u=${u#*://}
	u=/${u#*/}
	res="/$acct${u%%\?*}"
	if [[ $u =~ $re ]]; then
		res="$res?comp=${BASH_REMATCH[1]}"
	fi
}
canon() {
	local res
	_canon "$1"
	printf '%s\n' "$res"
}

# call METHOD PATH [rawurl args...]: Shared Key Lite signed request; sets
# $code (status), $err (x-ms-error-code), body in $tmp/body, headers in $tmp/hdr.
call() {
	local m=$1 p=$2 d res sig
	shift 2
	_now
	_canon "$p"
	_hmac "$d"$'\n'"$res"
	raw "$m" "$p" -H "x-ms-date: $d" -H "Authorization: SharedKeyLite $acct:$sig" "$@"
}

# raw METHOD PATH [rawurl args...]: unsigned request.
raw() {
	local m=$1 p=$2 u
	shift 2
	_url "$p"
	rawurl "$m" "$u" "$@"
}

# rawurl METHOD URL [ARGS...]: unsigned request to a full URL (sets what
# call sets).  ARGS: -H HEADER, --data and --data-binary (as curl's: @FILE
# or the bytes); an Accept header (minimal metadata) unless one is given.
rawurl() {
	local m=$1 u=$2 bodyfile=- accept= ca=- hs=()
	shift 2
	if [ -z "${sign_in:-}" ]; then
		case " ${*,,} " in *" accept:"*) ;; *) set -- "$@" -H "Accept: application/json;odata=minimalmetadata" ;; esac
		code=$(curl -s -g "${curlopts[@]}" --max-time "$timeout" -o "$tmp/body" -D "$tmp/hdr" -w '%{http_code}' \
			-X "$m" --path-as-is "$@" "$u")
	else
		while [ $# -gt 0 ]; do
			case $1 in
				-H)
					hs+=("$2")
					case ${2,,} in accept:*) accept=1 ;; esac
					;;
				--data | --data-binary)
					if [ "${2:0:1}" = @ ]; then
						bodyfile=${2#@}
					else
						printf '%s' "$2" >"$tmp/reqbody"
						bodyfile=$tmp/reqbody
					fi
					;;
				*)
					echo "rawurl: $1 is not taken" >&2
					return 1
					;;
			esac
			shift 2
		done
		[ -n "$accept" ] || hs+=("Accept: application/json;odata=minimalmetadata")
		case $u in https:*) ca=$GW_TLS_CA ;; esac
		local IFS=$'\t'
		printf 'R\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "$u" "$bodyfile" "$tmp" "$timeout" "$ca" "${hs[*]}" >&"$sign_in"
		IFS= read -r code <&"$sign_out"
	fi
	err=
	local line
	while IFS= read -r line; do
		case ${line,,} in x-ms-error-code:*) err=${line#*: } err=${err%$'\r'} ;; esac
	done <"$tmp/hdr"
}

# rawsock FILE [HOLD]: the bytes of FILE on one connection to the gateway
# (TLS if this run's is, with the name this run's style uses).  With HOLD,
# wait HOLD seconds and close without reading (a stalled client).  Else
# read the answer (until its Content-Length is in, or the gateway closes, or
# 3 s pass), then wait up to 1 s for the gateway to close: the answer in
# $tmp/body, its status in $code (000: none), $err, and $sockend "closed"
# if the gateway closed the connection, "open" if not.
rawsock() {
	local sni=127.0.0.1
	[ "$style" = host ] && sni=$acct.$hostsuffix
	local out
	out=$($py -c '
import socket, ssl, sys, time
port, tls, ca, sni, path, hold, out = sys.argv[1:8]
s = socket.create_connection(("127.0.0.1", int(port)), timeout=5)
if tls == "https":
    s = ssl.create_default_context(cafile=ca).wrap_socket(s, server_hostname=sni)
got, end = b"", "open"
try:
    s.sendall(open(path, "rb").read())
    if float(hold) > 0:
        time.sleep(float(hold))
        end = "held"
    else:
        deadline = time.monotonic() + 3
        while True:
            head, sep, rest = got.partition(b"\r\n\r\n")
            if sep:
                n = [int(h.split(b":", 1)[1]) for h in head.split(b"\r\n")
                     if h.lower().startswith(b"content-length:")]
                if n and len(rest) >= n[0]:
                    deadline = min(deadline, time.monotonic() + 1)
            s.settimeout(max(0.01, deadline - time.monotonic()))
            b = s.recv(65536)
            if not b:
                end = "closed"
                break
            got += b
except socket.timeout:
    pass
except (ConnectionError, ssl.SSLError):
    end = "closed"
s.close()
open(out, "wb").write(got)
line = got.split(b"\r\n", 1)[0].split()
print(line[1].decode() if len(line) > 1 and got.startswith(b"HTTP/") else "000", end)
' "$GW_PORT" "$scheme" "${GW_TLS_CA:-}" "$sni" "$1" "${2:-0}" "$tmp/body")
	read -r code sockend <<<"$out"
	err=$(grep -ai '^x-ms-error-code:' "$tmp/body" | head -n 1 | cut -d' ' -f2 | tr -d '\r')
}

# expect NAME STATUS [CODE]
expect() {
	local name=$1 want=$2 wcode=${3:-}
	if [ "$code" = "$want" ] && [ -z "$wcode" -o "$err" = "$wcode" ]; then
		pass=$((pass + 1))
		echo "ok   $name"
	else
		fail=$((fail + 1))
		echo "FAIL $name: got $code ${err:-} want $want $wcode"
		head -c 400 "$tmp/body" 2>/dev/null
		echo
	fi
}

# check NAME COMMAND...: a shell condition
check() {
	local name=$1
	shift
	if "$@"; then
		pass=$((pass + 1))
		echo "ok   $name"
	else
		fail=$((fail + 1))
		echo "FAIL $name"
		head -c 400 "$tmp/body" 2>/dev/null
		echo
	fi
}

# as_account NAME BASE64KEY: sign the following requests as another account
as_account() {
	acct=$1
	keyhex=$(printf '%s' "$2" | base64 -d | od -An -tx1 -v | tr -d ' \n')
}
