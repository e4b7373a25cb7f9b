#!/usr/bin/python3
"""test/gateway/oauth_test.py: OAuth bearer tokens (issue 22, Azurite's
oauth tests), against gateways of its own started from test/t/010_gateway.pl's
set-up (GW_BIN_ASAN, GW_WORK with its accounts file, PGHOST, PGPORT).

Keys and tokens are made here with openssl: two trusted RSA keys given to
the gateway as certificates, another one it does not know.  Checked:
  - a token signed by a trusted key, valid now, for Azure Storage or the
    account's endpoint (with or without "/", in any case, alone or in an
    aud array), from an accepted issuer (the tenant's v1 and v2 issuers
    with its tid, or an --oauth-issuer exactly), works through raw HTTPS
    and the Python and JavaScript SDKs (a TokenCredential) and acts as
    the role its principal (oid, in any case) is mapped to; a token that
    names its certificate (kid, x5t, x5t#S256) is verified with that one;
  - an unmapped principal, a token without oid (even for "*"), another
    tenant's token, the tenant's issuer with another tid, an issuer
    longer or shorter than the accepted one: 403;
  - every way a token can be wrong is 403 AuthenticationFailed and changes
    nothing: an untrusted key, a tampered claim, alg none, HS256 keyed with
    the public key, an unknown crit header, expired, not yet valid, exp or
    nbf that are no dates (strings, 1e309, past 9999), wrong issuer,
    another account's endpoint as audience, not base64url, padded, four
    segments, over 16 KiB, a claim named twice;
  - a bearer token over plain HTTP is refused, as is one sent to a gateway
    without --oauth-key;
  - table ACLs are refused to a bearer token (403 AuthorizationFailure);
  - the gateway refuses to start with a key under 2048 or over 4096 bits,
    e = 3, nine keys, a key without an issuer, a malformed tenant, or a
    principal of an unknown account (the outside attack's findings 1-5).
"""
import base64
import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
import uuid

import gwlib

GW = os.environ.get("GW_BIN_ASAN", "gateway/tablestore-gateway-asan")
WORK = os.environ["GW_WORK"]
DB = f"host={os.environ['PGHOST']} port={os.environ.get('PGPORT', '5432')} dbname=gwtest user=gwt_auth"
ACCT = "devstoreaccount1"
DEV_OID = "11111111-1111-1111-1111-111111111111"   # mapped, the account's role
READER_OID = "22222222-2222-2222-2222-222222222222"  # mapped to gwt_reader
STRANGER_OID = "33333333-3333-3333-3333-333333333333"  # not mapped
TENANT = "ab1f708d-50f6-404c-a006-d71b2ac7a606"     # the operator's tenant
OTHER_TENANT = "99999999-9999-9999-9999-999999999999"
CUSTOM_ISS = "https://idp.example/realms/app"       # a non-Entra issuer
check = gwlib.Checks("oauth_test")
procs = []



def sh(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, **kw).stdout


tmp = tempfile.mkdtemp(prefix="tsoauth.", dir="/tmp")
key = f"{tmp}/trusted.key"
crt = f"{tmp}/trusted.crt"
other = f"{tmp}/other.key"
weak = f"{tmp}/weak.key"
sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=issuer",
   "-keyout", key, "-out", crt)
sh("openssl", "genrsa", "-out", other, "2048")
sh("openssl", "genrsa", "-out", weak, "1024")
sh("openssl", "genrsa", "-out", f"{tmp}/stranger.key", "2048")
sh("openssl", "genrsa", "-3", "-out", f"{tmp}/e3.key", "2048")
sh("openssl", "rsa", "-in", f"{tmp}/e3.key", "-pubout", "-out", f"{tmp}/e3.pub")
sh("openssl", "genrsa", "-out", f"{tmp}/big.key", "4608")
sh("openssl", "rsa", "-in", f"{tmp}/big.key", "-pubout", "-out", f"{tmp}/big.pub")
sh("openssl", "req", "-x509", "-key", other, "-days", "1", "-subj", "/CN=other", "-out", f"{tmp}/other.crt")
sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
   "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", f"{tmp}/tls.key", "-out", f"{tmp}/tls.crt")
pub = sh("openssl", "rsa", "-in", key, "-pubout")
sh("openssl", "rsa", "-in", weak, "-pubout", "-out", f"{tmp}/weak.pub")


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def rs256(signing_input, keyfile):
    return sh("openssl", "dgst", "-sha256", "-sign", keyfile, input=signing_input.encode())


def hs256(signing_input, secret):
    import hmac
    import hashlib
    return hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()


def token(oid=DEV_OID, keyfile=key, alg="RS256", header_extra=None, aud="https://storage.azure.com",
          iss=f"https://sts.windows.net/{TENANT}/", exp=3600, nbf=-60, drop=(), extra=None, tid=TENANT):
    now = int(time.time())
    header = {"alg": alg, "typ": "JWT"}
    header.update(header_extra or {})
    claims = {"aud": aud, "iss": iss, "iat": now + nbf, "nbf": now + nbf, "exp": now + exp,
              "oid": oid, "tid": tid, "scp": "user_impersonation"}
    claims.update(extra or {})
    for d in drop:
        claims.pop(d, None)
    si = b64u(json.dumps(header).encode()) + "." + b64u(json.dumps(claims).encode())
    if alg == "none":
        return si + "."
    sig = hs256(si, pub) if alg == "HS256" else rs256(si, keyfile)
    return si + "." + b64u(sig)


def raw_token(claims_text, keyfile=key):
    """a token whose claims are this JSON text, as written"""
    si = b64u(b'{"alg":"RS256","typ":"JWT"}') + "." + b64u(claims_text.encode())
    return si + "." + b64u(rs256(si, keyfile))


def start(name, *args):
    """a gateway of its own; its port"""
    portfile = f"{tmp}/{name}.port"
    log = open(f"{WORK}/oauth-{name}.log", "w")
    p = subprocess.Popen([GW, "--db", DB, "--accounts-file", f"{WORK}/accounts", "--port", "0",
                          "--port-file", portfile, "--pool", "2", "--threads", "4", *args],
                         stdout=log, stderr=subprocess.STDOUT)
    procs.append(p)
    for _ in range(100):
        if os.path.exists(portfile) and os.path.getsize(portfile) > 0:
            return int(open(portfile).read())
        if p.poll() is not None:
            break
        time.sleep(0.1)
    print(f"FAIL gateway {name} did not start")
    sys.exit(1)


def thumbprint(cert, alg):
    der = sh("openssl", "x509", "-in", cert, "-outform", "DER")
    import hashlib
    return b64u(hashlib.new(alg, der).digest())


oauth_args = ["--oauth-key", crt, "--oauth-key", f"{tmp}/other.crt", "--oauth-tenant", TENANT,
              "--oauth-issuer", CUSTOM_ISS,
              "--oauth-principal", f"{ACCT}:{DEV_OID}",
              "--oauth-principal", f"{ACCT}:{READER_OID.upper()}:gwt_reader",
              "--oauth-principal", "reader:*"]
tls_port = start("tls", "--tls-cert", f"{tmp}/tls.crt", "--tls-key", f"{tmp}/tls.key", *oauth_args)
http_port = start("http", *oauth_args)
ctx = ssl.create_default_context(cafile=f"{tmp}/tls.crt")


def request(method, path, tok=None, body=None, port=None, tls=True, query="", auth=None):
    h = {"x-ms-version": "2019-02-02", "Accept": "application/json;odata=nometadata"}
    if tok is not None:
        h["Authorization"] = auth or f"Bearer {tok}"
    if body is not None:
        body = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    if tls:
        c = http.client.HTTPSConnection("127.0.0.1", port or tls_port, timeout=30, context=ctx)
    else:
        c = http.client.HTTPConnection("127.0.0.1", port or http_port, timeout=30)
    c.request(method, f"/{ACCT}/{path}" + (f"?{query}" if query else ""), body=body, headers=h)
    r = c.getresponse()
    data = r.read().decode("utf-8", "replace")
    c.close()
    return r.status, r.getheader("x-ms-error-code", ""), data


table = "oauth" + uuid.uuid4().hex[:10]

# what works
st, code, _ = request("POST", "Tables", token(), {"TableName": table})
check("create a table with a token", st == 201, f"{st} {code}")
st, code, _ = request("POST", table, token(), {"PartitionKey": "p", "RowKey": "1", "n": 1})
check("insert with a token", st == 201, f"{st} {code}")
for aud in ("https://storage.azure.com/", "e406a681-f3d4-42a8-90b6-c2b029497af1",
            f"https://{ACCT}.table.core.windows.net", f"https://{ACCT}.table.core.windows.net/",
            f"https://{ACCT}.table.core.chinacloudapi.cn", ["https://elsewhere.example", "https://storage.azure.com"]):
    st, code, _ = request("GET", f"{table}(PartitionKey='p',RowKey='1')", token(aud=aud))
    check(f"audience {aud}", st == 200, f"{st} {code}")
for iss, tid in ((f"https://login.microsoftonline.com/{TENANT}/v2.0", TENANT),
                 (f"https://sts.windows.net/{TENANT}/", TENANT.upper()),
                 (CUSTOM_ISS, None)):
    st, code, _ = request("GET", f"{table}(PartitionKey='p',RowKey='1')", token(iss=iss, tid=tid))
    check(f"issuer {iss}", st == 200, f"{st} {code}")
st, code, _ = request("GET", f"{table}(PartitionKey='p',RowKey='1')",
                      token(aud=f"HTTPS://{ACCT.upper()}.TABLE.CORE.WINDOWS.NET/"))
check("an audience URL in upper case", st == 200, f"{st} {code}")
st, code, _ = request("GET", f"{table}(PartitionKey='p',RowKey='1')", token(),
                      auth="Bearer  " + token() + " \t")
check("blanks around the token", st == 200, f"{st} {code}")
# a token naming its certificate (as Entra ID's do) is verified with that one
for name, alg in (("x5t", "sha1"), ("kid", "sha1"), ("x5t#S256", "sha256")):
    st, code, _ = request("GET", f"{table}(PartitionKey='p',RowKey='1')",
                          token(header_extra={name: thumbprint(crt, alg)}))
    check(f"a token naming its certificate by {name}", st == 200, f"{st} {code}")
st, code, body = request("GET", f"{table}(PartitionKey='p',RowKey='1')",
                         token(header_extra={"kid": thumbprint(f"{tmp}/other.crt", "sha1")}))
check("a token naming another trusted certificate than its signer's", st == 403 and "Signature" in body,
      f"{st} {code}")
st, code, _ = request("GET", f"{table}(PartitionKey='p',RowKey='1')", token(keyfile=other))
check("the second trusted key", st == 200, f"{st} {code}")
st, code, _ = request("GET", f"{table}(PartitionKey='p',RowKey='1')", token(exp=-60))
check("five minutes of clock skew on exp", st == 200, f"{st} {code}")
st, code, _ = request("GET", f"{table}(PartitionKey='p',RowKey='1')", token(),
                      auth="bearer " + token())
check("the scheme's name in any case", st == 200, f"{st} {code}")

# the role is the principal's: gwt_reader may not read gwt_dev's table
st, code, body = request("GET", f"{table}(PartitionKey='p',RowKey='1')", token(oid=READER_OID))
check("a principal acts as its mapped role", st == 403 and code == "AuthorizationPermissionMismatch",
      f"{st} {code} {body[:200]}")
st, code, _ = request("GET", f"{table}(PartitionKey='p',RowKey='1')", token(oid=STRANGER_OID))
check("an unmapped principal is not authorized", st == 403 and code == "AuthorizationPermissionMismatch",
      f"{st} {code}")
st, code, _ = request("GET", f"{table}(PartitionKey='p',RowKey='1')", token(drop=("oid",)))
check("a token without oid maps to no principal", st == 403 and code == "AuthorizationPermissionMismatch",
      f"{st} {code}")
# "*": any principal of an accepted issuer, but one that names itself
ACCT_SAVED = ACCT
ACCT = "reader"
st, code, body = request("GET", "readertab()", token(oid=STRANGER_OID),
                         query="$filter=RowKey%20eq%20'00001'")
check("reader:* lets any principal of the tenant read", st == 200 and "00001" in body, f"{st} {code}")
for name, tok in (("no oid", token(drop=("oid",))), ("an empty oid", token(oid="")),
                  ("another tenant", token(iss=f"https://sts.windows.net/{OTHER_TENANT}/", tid=OTHER_TENANT)),
                  ("another tenant, v2", token(iss=f"https://login.microsoftonline.com/{OTHER_TENANT}/v2.0",
                                               tid=OTHER_TENANT)),
                  ("the tenant's issuer with another tid", token(tid=OTHER_TENANT)),
                  ("the tenant's issuer without tid", token(tid=None)),
                  ("a longer issuer than the one accepted", token(iss=CUSTOM_ISS + ".attacker.net/")),
                  ("a shorter issuer", token(iss="https://idp.example/"))):
    st, code, _ = request("GET", "readertab()", tok)
    check(f"reader:* refuses a token with {name}", st == 403, f"{st} {code}")
ACCT = ACCT_SAVED

# every way a token is refused; each time an insert that must not happen
good = token()
head, claims, sig = good.split(".")
tampered_claims = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
tampered_claims["oid"] = READER_OID
tampered = head + "." + b64u(json.dumps(tampered_claims).encode()) + "." + sig
bad = {
    "a key the gateway does not trust": (token(keyfile=f"{tmp}/stranger.key"), "Signature"),
    "a tampered claim": (tampered, "Signature"),
    "alg none": (token(alg="none"), "algorithm"),
    "HS256 keyed with the public key": (token(alg="HS256"), "algorithm"),
    "an unknown crit header": (token(header_extra={"crit": ["exp"]}), "critical"),
    "expired": (token(exp=-400, nbf=-800), "expire"),
    "not yet valid": (token(nbf=400, exp=4000), "Lifetime"),
    "no exp": (token(drop=("exp",)), "Lifetime"),
    "an exp that is a string": (token(extra={"exp": "4102444800"}), "Lifetime"),
    "an exp past the year 9999": (token(extra={"exp": 1e18}), "Lifetime"),
    "an exp of 1e309": (raw_token('{"aud":"https://storage.azure.com","iss":"https://sts.windows.net/'
                                  + TENANT + '/","tid":"' + TENANT + '","oid":"' + DEV_OID + '","exp":1e309}'),
                        ""),
    "an nbf that is a string": (token(extra={"nbf": "soon"}), "Lifetime"),
    "a negative nbf": (token(extra={"nbf": -1e300}), "Lifetime"),
    "a wrong issuer": (token(iss="https://invalidissuer/x/"), "issuer"),
    "another tenant": (token(iss=f"https://sts.windows.net/{OTHER_TENANT}/", tid=OTHER_TENANT), "issuer"),
    "another account's endpoint": (token(aud="https://other.table.core.windows.net"), "audience"),
    "an account name's prefix": (token(aud=f"https://{ACCT}x.table.core.windows.net"), "audience"),
    "no audience": (token(drop=("aud",)), "audience"),
    "a header not base64url": ("*" + good, "header"),
    "a signature not base64url": (good + "*", "Signature"),
    "padded": (head + "=." + claims + "." + sig, "header"),
    "four segments": (good + ".x", "JWT"),
    "over 16 KiB": (token(extra={"pad": "x" * 17000}), "JWT"),
    "not a JWT": ("invalid token", "JWT"),
    "a claim named twice": (raw_token('{"aud":"https://storage.azure.com","iss":"https://sts.windows.net/t/",'
                                      f'"exp":{int(time.time()) + 3600},"oid":"{STRANGER_OID}","oid":"{DEV_OID}"}}'),
                            "claims"),
    "claims that are no object": (raw_token('["https://storage.azure.com"]'), "claims"),
    "empty": ("", "JWT"),
}
for i, (name, (tok, word)) in enumerate(bad.items()):
    st, code, body = request("POST", table, tok, {"PartitionKey": "bad", "RowKey": str(i)})
    check(f"refused: {name}", st == 403 and code == "AuthenticationFailed" and word in body,
          f"{st} {code} {body[:300]}")
st, code, body = request("GET", table, good, query="$filter=PartitionKey%20eq%20'bad'")
check("nothing a refused token sent was written", st == 200 and json.loads(body)["value"] == [], body[:200])

# plain HTTP, and a gateway without --oauth-key (run.sh's main gateway)
st, code, body = request("GET", "Tables", good, tls=False)
check("a bearer token over HTTP is refused", st == 403 and code == "AuthenticationFailed" and "HTTP" in body,
      f"{st} {code}")
if os.environ.get("GW_PORT"):
    st, code, body = request("GET", "Tables", good, tls=False, port=int(os.environ["GW_PORT"]))
    check("a gateway without --oauth-key refuses bearer tokens",
          st == 403 and code == "AuthenticationFailed" and "oauth-key" in body, f"{st} {code}")

# table ACLs are the account key's
for method in ("GET", "PUT"):
    st, code, _ = request(method, table, good, query="comp=acl")
    check(f"{method} table ACL with a token", st == 403 and code == "AuthorizationFailure", f"{st} {code}")

# the Python SDK with a TokenCredential
try:
    from azure.core.credentials import AccessToken
    from azure.data.tables import TableClient

    class Cred:
        def get_token(self, *scopes, **kw):
            return AccessToken(token(), int(time.time()) + 3000)

    os.environ["REQUESTS_CA_BUNDLE"] = f"{tmp}/tls.crt"
    tc = TableClient(f"https://127.0.0.1:{tls_port}/{ACCT}", table, credential=Cred())
    tc.upsert_entity({"PartitionKey": "p", "RowKey": "sdk", "v": "from the SDK"})
    got = tc.get_entity("p", "sdk")
    check("Python SDK with a TokenCredential", got["v"] == "from the SDK", str(got))
    rows = list(tc.query_entities("PartitionKey eq 'p'"))
    check("Python SDK query with a TokenCredential", len(rows) == 2, str(len(rows)))
except Exception as e:  # noqa: BLE001
    check("Python SDK with a TokenCredential", False, repr(e)[:300])

# the JavaScript SDK with a TokenCredential, a table of its own
js = subprocess.run(["node", "test/gateway/oauth_sdk.mjs"], capture_output=True, timeout=120,
                    env={**os.environ, "OAUTH_URL": f"https://127.0.0.1:{tls_port}/{ACCT}",
                         "OAUTH_TOKEN": token(), "OAUTH_TABLE": "js" + uuid.uuid4().hex[:10],
                         "NODE_EXTRA_CA_CERTS": f"{tmp}/tls.crt"})
check("JavaScript SDK with a TokenCredential", js.returncode == 0, (js.stdout + js.stderr)[-400:].decode())

st, _, _ = request("DELETE", f"Tables('{table}')", good)
check("delete the table with a token", st == 204, str(st))

# configurations the gateway refuses at start
for name, args in (("a 1024-bit key", ["--oauth-key", f"{tmp}/weak.pub", "--oauth-tenant", TENANT]),
                   ("a key with e = 3", ["--oauth-key", f"{tmp}/e3.pub", "--oauth-tenant", TENANT]),
                   ("a key over 4096 bits", ["--oauth-key", f"{tmp}/big.pub", "--oauth-tenant", TENANT]),
                   ("a key without an issuer", ["--oauth-key", crt, "--oauth-principal", f"{ACCT}:*"]),
                   ("a tenant that is no id", ["--oauth-key", crt, "--oauth-tenant", "x/../y"]),
                   ("nine keys", [a for _ in range(9) for a in ("--oauth-key", crt)] + ["--oauth-tenant", TENANT]),
                   ("a file without a key", ["--oauth-key", f"{WORK}/accounts"]),
                   ("a principal of an unknown account", ["--oauth-key", crt, "--oauth-tenant", TENANT,
                                                          "--oauth-principal", "nosuch:*"]),
                   ("a principal without a key", ["--oauth-principal", f"{ACCT}:*"])):
    r = subprocess.run([GW, "--db", DB, "--accounts-file", f"{WORK}/accounts", "--port", "0", *args],
                       capture_output=True, timeout=30)
    check(f"refused at start: {name}", r.returncode == 2, f"{r.returncode} {r.stderr[-200:]}")

for p in procs:
    p.terminate()
    p.wait(timeout=30)
    check("the gateway exits cleanly (ASan: no leak)", p.returncode == 0, str(p.returncode))
check.finish()
