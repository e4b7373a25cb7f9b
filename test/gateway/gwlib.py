"""test/gateway/gwlib.py: what the Python tests of the gateway share.

The account and key of the gateway under test (GW_PORT, GW_DEV_KEY, as
test/t/010_gateway.pl exports them; the development account's published key
when GW_DEV_KEY is unset), the Shared Key signature of a string, the Shared
Key Lite headers of a request, a signed request, and the counted checks
every test reports with.  A test imports it from its own directory
(python3 puts a script's directory first on sys.path).
"""
import base64
import hashlib
import hmac
import http.client
import json
import os
import sys
import urllib.parse
from email.utils import formatdate

ACCT = "devstoreaccount1"
DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
KEY_B64 = os.environ.get("GW_DEV_KEY", DEV_KEY)
KEY = base64.b64decode(KEY_B64)
PORT = int(os.environ["GW_PORT"]) if os.environ.get("GW_PORT") else None


def sign(string_to_sign, key=KEY):
    """base64 HMAC-SHA256 of a string to sign (surrogates kept as the bytes
    they escape, for the fuzzer's malformed strings)"""
    data = string_to_sign.encode("utf-8", "surrogateescape")
    return base64.b64encode(hmac.new(key, data, hashlib.sha256).digest()).decode()


def shared_key_lite(url_path, query="", date=None, account=ACCT, key=KEY):
    """the x-ms-date and Authorization headers of a Shared Key Lite request
    on url_path (the path as sent, "/<account>/..."), with the query's comp
    in the canonical resource as the service signs it"""
    date = date or formatdate(usegmt=True)
    comp = urllib.parse.parse_qs(query).get("comp") if query else None
    res = f"/{account}{url_path}" + (f"?comp={comp[0]}" if comp else "")
    sig = sign(date + "\n" + res, key)
    return {"x-ms-date": date, "Authorization": f"SharedKeyLite {account}:{sig}"}


def request(method, path, body=None, headers=None, query="", signed=True, port=None):
    """a request on path (after the account, as sent): a dict or list body
    goes as JSON; (status, headers with lower-case names, body text)"""
    url = f"/{ACCT}/{path}"
    h = {"x-ms-version": "2019-02-02", "Accept": "application/json;odata=nometadata",
         "DataServiceVersion": "3.0"}
    if signed:
        h.update(shared_key_lite(url, query))
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    c = http.client.HTTPConnection("127.0.0.1", port or PORT, timeout=30)
    c.putrequest(method, url + (f"?{query}" if query else ""), skip_accept_encoding=True)
    for k, v in h.items():
        c.putheader(k, v)
    c.putheader("Content-Length", str(len(body or b"")))
    c.endheaders(body or None)
    r = c.getresponse()
    data = r.read().decode("utf-8", "replace")
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


class Checks:
    """counted checks: each failure printed as it happens, a summary line
    and the exit status at the end"""

    def __init__(self, name):
        self.name = name
        self.passes = 0
        self.failures = 0

    def __call__(self, what, cond, detail=""):
        if cond:
            self.passes += 1
        else:
            self.failures += 1
            print(f"FAIL {what} {detail}", flush=True)
        return cond

    def finish(self):
        print(f"{self.name}: {self.passes} passed, {self.failures} failed")
        sys.exit(1 if self.failures else 0)
