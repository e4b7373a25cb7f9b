# test/gateway/lib.sh: helpers of the raw HTTP tests (sourced): Shared Key
# Lite signing with openssl, requests with curl, and checks that count
# passes and failures.  Needs GW_PORT and GW_DEV_KEY.
base=${GW_BASE:-http://127.0.0.1:$GW_PORT}
acct=devstoreaccount1
keyhex=$(printf '%s' "$GW_DEV_KEY" | base64 -d | od -An -tx1 -v | tr -d ' \n')
fail=0
pass=0
tmp=$(mktemp -d /tmp/gwhttp.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

hmac() { printf '%s' "$1" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$keyhex" -binary | base64 -w0; }
now() { LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S GMT'; }

# call METHOD RAWPATH [curl args...]: Shared Key Lite signed request; sets
# $code (status), $err (x-ms-error-code), body in $tmp/body, headers in $tmp/hdr.
call() {
	local m=$1 p=$2
	shift 2
	local d
	d=$(now)
	local res="/$acct${p%%\?*}"
	case "$p" in *comp=*) res="$res?comp=$(sed 's/.*comp=\([^&]*\).*/\1/' <<<"$p")" ;; esac
	local sig
	sig=$(hmac "$d"$'\n'"$res")
	raw "$m" "$p" -H "x-ms-date: $d" -H "Authorization: SharedKeyLite $acct:$sig" "$@"
}

# raw METHOD RAWPATH [curl args...]: unsigned request.
raw() {
	local m=$1 p=$2
	shift 2
	# the caller's headers first: the gateway reads the first of two
	# shellcheck disable=SC2086
	code=$(curl -s -g ${GW_CURL_OPTS:-} -o "$tmp/body" -D "$tmp/hdr" -w '%{http_code}' -X "$m" --path-as-is \
		"$@" -H "Accept: application/json;odata=minimalmetadata" "$base$p")
	err=$(grep -i '^x-ms-error-code:' "$tmp/hdr" | cut -d' ' -f2 | tr -d '\r')
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
		head -c 400 "$tmp/body"
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
		head -c 400 "$tmp/body"
		echo
	fi
}

# as_account NAME BASE64KEY: sign the following requests as another account
as_account() {
	acct=$1
	keyhex=$(printf '%s' "$2" | base64 -d | od -An -tx1 -v | tr -d ' \n')
}
