#!/usr/bin/python3
"""test/gateway/fuzz_http.py: an HTTP fuzzer against tablestore-gateway.

Runs against the (ASan) gateway test/t/010_gateway.pl started: GW_PORT and
GW_DEV_KEY as for http_test.sh (and GW_SCHEME=https, GW_TLS_CA for a
gateway serving HTTPS), TS_SERVER_LOG the database server's log.
For FUZZ_HTTP_SECONDS (default 30) it sends, one at a time on a new
connection each,
  - requests signed with Shared Key Lite or Shared Key (the gateway checks
    the signature first, so only signed mutations get past it), built from
    valid requests of every kind (tables, entities, queries, $batch) whose
    method, path (path- and host-style addressing, table names, keys with
    quotes, percent escapes, unicode, huge), query string ($filter, $select, $top, continuation tokens,
    repeated and empty parameters), headers (Accept, Prefer, If-Match,
    Content-Type, X-HTTP-Method, duplicates) and bodies (JSON entities:
    types, annotations, duplicate names, depth, size; multipart batches:
    boundaries, change sets, parts) are mutated;
  - raw framing mutations: bad request lines, header folding, bare LF and
    CR, NULs, chunked encoding garbage, Content-Length lies, pipelining,
    early close.
It fails on: the gateway no longer answering (dead), a 5xx other than 503
(and 501 NotImplemented, the answer to operations the gateway does not serve,
and 505 to HTTP versions other than 1.x),
a response that is not well-formed HTTP (or a JSON body that is not JSON),
no answer to a complete signed request, and an XX000 error (or a backend
killed by a signal) in the server log written during the run.  Every choice
comes from one seed (printed; FUZZ_HTTP_SEED=N repeats the run, and
FUZZ_HTTP_REPLAY=I sends only request I of that seed's sequence).  Prints
the number of requests, the histogram of statuses and every failing request
(truncated).
"""

import base64
import datetime
import hashlib
import json
import os
import random
import re
import socket
import ssl
import subprocess
import sys
import time

import gwlib

ACCOUNT = "devstoreaccount1"
PORT = int(os.environ["GW_PORT"])
SECONDS = float(os.environ.get("FUZZ_HTTP_SECONDS", "30"))
# deterministic by default: seed 1 unless FUZZ_HTTP_SEED gives one (N, or random)
_seed = os.environ.get("FUZZ_HTTP_SEED") or "1"
SEED = int.from_bytes(os.urandom(4), "big") if _seed == "random" else int(_seed)
REPLAY = os.environ.get("FUZZ_HTTP_REPLAY")
SERVER_LOG = os.environ.get("TS_SERVER_LOG")
TLS = None
if os.environ.get("GW_SCHEME") == "https":
    # the same over TLS (GW_TLS_CA: the gateway's certificate)
    TLS = ssl.create_default_context(cafile=os.environ.get("GW_TLS_CA"))
ANSWER_TIMEOUT = 20.0   # a complete signed request must be answered by then
TABLES = ["fzA", "fzB", "fzC"]


def rfc1123(skew=0):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=skew)
    return t.strftime("%a, %d %b %Y %H:%M:%S GMT")


def b64sig(sts):
    return gwlib.sign(sts)


# ---- building blocks of requests --------------------------------------------

WEIRD_STRINGS = ["", "a", "'", "''", "%27", "%", "%2", "%zz", "%00", "\u00e9", "\u65e5\u672c", "\U0001F600",
                 "%C3%A9", "%ED%A0%80", "%FF", "/", "%2F", "\\", "#", "?", "a b", "a%20b", "+", "x" * 1024,
                 "y" * 70000, "\t", "()", "(", ")", ",", "=", "&", "PartitionKey", "Tables", "$batch",
                 "'); DROP TABLE x; --", "a''b", "\x7f"]

FILTERS = ["PartitionKey eq 'p'", "RowKey gt '1'", "n eq 1", "n gt 1L", "d lt 2.5", "b eq true",
           "g eq guid'00000000-0000-0000-0000-000000000000'", "t ge datetime'2020-01-01T00:00:00Z'",
           "bin eq X'00ff'", "not (n eq 1)", "PartitionKey eq 'p' and RowKey ne 'q'", "(n eq 1) or (n eq 2)",
           "TableName eq 'fzA'", "s eq 'it''s'", "n eq 99999999999999999999", "n eq -2147483649",
           "d eq 1e400", "n eq", "eq 1", "((((((((((n eq 1))))))))))", "(" * 200 + "n eq 1" + ")" * 200,
           "n eq 1 and " * 300 + "n eq 1", "s eq '" + "z" * 5000 + "'", "PartitionKey eq 'p", "x eq null",
           "n add 1 eq 2", "substringof('a', s)", "n eq 1L and d eq 1.0", "t eq datetime'garbage'",
           "g eq guid'zz'", "b eq X'0'", "s eq '\u00e9\U0001F600'", "s eq '%00'", "1 eq 1", "true"]

SELECTS = ["PartitionKey", "RowKey,n", "n,d,b", "*", "", ",", "a,a", "Timestamp", "x" * 300,
           ",".join("c%d" % i for i in range(300)), "PartitionKey,,RowKey", "odata.etag"]

TOPS = ["1", "5", "1000", "1001", "0", "-1", "+5", "%205", "%2B5", " 5", "05", "5.0", "abc", "",
        "99999999999999999999", "1e3", "0x10"]

ACCEPTS = ["application/json;odata=nometadata", "application/json;odata=minimalmetadata",
           "application/json;odata=fullmetadata", "application/json", "application/atom+xml", "*/*",
           "text/html", "", "application/json;odata=", "application/json;odata=nometadata;odata=fullmetadata",
           "application/xml"]

CTYPES = ["application/json", "application/json;odata=nometadata", "application/json; charset=utf-8",
          "text/plain", "", "multipart/mixed; boundary=batch_b", "application/atom+xml", "application/json;;"]

PREFERS = ["return-no-content", "return-content", "garbage", "", "return-content, return-no-content"]

IF_MATCH = ["*", 'W/"datetime\'2020-01-01T00%3A00%3A00.0000000Z\'"', "garbage", "", '"x"', "W/", "**"]

XMETHODS = ["MERGE", "PUT", "DELETE", "PATCH", "GET", "POST", "merge", "", "X" * 100]

TYPES = ["Edm.String", "Edm.Int32", "Edm.Int64", "Edm.Double", "Edm.Boolean", "Edm.DateTime", "Edm.Guid",
         "Edm.Binary", "Edm.Garbage", "", "edm.int32"]

VALUES = [0, 1, -1, 2 ** 31, -2 ** 31 - 1, 2 ** 63, 1.5, 1e308, -0.0, True, False, None, "", "s", "123",
          "2020-01-01T00:00:00Z", "00000000-0000-0000-0000-000000000000", "AAEC", "not base64!", [], {},
          [1, 2], {"a": 1}, "x" * 40000, "\u00e9\U0001F600", "\x00", "NaN", "Infinity", "-9223372036854775809"]


class Gen:
    """Request generator: every choice from one random.Random."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def pick(self, xs):
        return xs[self.r.randrange(len(xs))]

    def chance(self, p):
        return self.r.random() < p

    # -- path pieces --
    def table(self):
        if self.chance(0.85):
            return self.pick(TABLES)
        return self.pick(WEIRD_STRINGS + ["Tables", "fz" + "q" * 70, "1abc", "ab", "fz-x"])

    def key(self):
        if self.chance(0.6):
            return self.pick(["p", "q", "1", "2", "3"])
        k = self.pick(WEIRD_STRINGS)
        if self.chance(0.3):
            k = k.replace("'", "''")
        return k

    def entity_path(self, table):
        pk, rk = self.key(), self.key()
        form = self.r.randrange(10)
        if form == 0:
            return "%s(PartitionKey='%s')" % (table, pk)
        if form == 1:
            return "%s(RowKey='%s',PartitionKey='%s')" % (table, rk, pk)
        if form == 2:
            return "%s(PartitionKey='%s',RowKey='%s',RowKey='%s')" % (table, pk, rk, rk)
        if form == 3:
            return "%s(PartitionKey=%s,RowKey='%s')" % (table, pk, rk)
        return "%s(PartitionKey='%s',RowKey='%s')" % (table, pk, rk)

    # -- query strings --
    def query(self, kind):
        params = []
        if kind in ("query", "tables"):
            if self.chance(0.6):
                params.append(("$filter", self.pick(FILTERS)))
            if self.chance(0.4):
                params.append(("$top", self.pick(TOPS)))
            if kind == "query" and self.chance(0.4):
                params.append(("$select", self.pick(SELECTS)))
            if self.chance(0.2):
                names = (["NextTableName"] if kind == "tables" else ["NextPartitionKey", "NextRowKey"])
                for n in names:
                    params.append((n, self.pick(["", "1!4!cA--", "garbage", "1!8!cAAAAA--", "x" * 3000,
                                                 "%00", "1!4!", "!!!"])))
        if self.chance(0.1):
            params.append(("$format", self.pick(ACCEPTS)))
        if self.chance(0.1):
            params.append(("timeout", self.pick(["30", "-1", "x"])))
        if self.chance(0.03):
            params.append(("comp", self.pick(["acl", "properties", "stats", ""])))
        if self.chance(0.05):
            params.append(("restype", self.pick(["service", "table", ""])))
        if self.chance(0.1):
            params.append(("sig", "abc"))
        if params and self.chance(0.15):
            params.append(self.pick(params))          # repeated
        if self.chance(0.1):
            params.append((self.pick(["", "$filter", "x", "$top"]), ""))
        if self.chance(0.03):
            params.extend(("p%d" % i, "v") for i in range(self.r.randrange(30, 60)))
        parts = []
        for k, v in params:
            if self.chance(0.7):
                v = v.replace("%", "%25").replace(" ", "%20").replace("&", "%26").replace("#", "%23") \
                    .replace("+", "%2B")
            if self.chance(0.05):
                parts.append(k)
            else:
                parts.append("%s=%s" % (k, v))
        q = "&".join(parts)
        if q and self.chance(0.05):
            q = self.pick(["&", "&&", "=", "?"]) + q
        return q

    # -- JSON bodies --
    def json_value(self, depth=0):
        if depth < 3 and self.chance(0.1):
            return [self.json_value(depth + 1) for _ in range(self.r.randrange(3))]
        return self.pick(VALUES)

    def entity(self, pk=None, rk=None):
        """A JSON entity as text, often mutated."""
        props = []
        if self.chance(0.9):
            props.append(("PartitionKey", pk if pk is not None else self.key()))
        if self.chance(0.9):
            props.append(("RowKey", rk if rk is not None else self.key()))
        for i in range(self.r.randrange(6)):
            name = self.pick(["n", "d", "b", "s", "t", "g", "bin", "big", "x%d" % i, "", "odata.type",
                              "Timestamp", "a" * 300, "1x", "\u00e9", "PartitionKey", "n@odata.type"])
            v = self.json_value()
            props.append((name, v))
            if self.chance(0.4):
                props.append((name + "@odata.type", self.pick(TYPES)))
        if self.chance(0.05):
            props.extend(("c%d" % i, i) for i in range(self.r.randrange(200, 300)))
        if self.chance(0.1) and props:
            props.append(self.pick(props))             # duplicate name
        text = "{" + ",".join("%s:%s" % (json.dumps(k), json.dumps(v)) for k, v in props) + "}"
        m = self.r.randrange(20)
        if m == 0:
            text = "[" * 5000 + "]" * 5000
        elif m == 1:
            text = text[:self.r.randrange(len(text) + 1)]
        elif m == 2:
            text += "\x00" * self.r.randrange(1, 4)
        elif m == 3:
            text = '{"PartitionKey":"p","RowKey":"1","s":"' + "\\ud800" + '"}'
        elif m == 4:
            text = '{"PartitionKey":"p","RowKey":"1","o":' + '{"a":' * 2000 + "1" + "}" * 2000 + "}"
        elif m == 5:
            text = '{"PartitionKey":"p","RowKey":"1","big":"' + "b" * self.r.choice([70000, 1100000]) + '"}'
        elif m == 6:
            text = text.replace(":", ": ", 1) + " " * 10
        elif m == 7:
            text = "null"
        elif m == 8:
            text = '{"PartitionKey":"p","RowKey":"1","n":1e999,"m":-1e999,"k":0.0000000000000000000000001}'
        elif m == 9:
            text = "\ufeff" + text
        return text

    # -- multipart batches --
    def batch(self, host):
        """A $batch body and its boundary, often mutated."""
        b = "batch_" + self.pick(["b", "x1", "abc-123", "q" * 60])
        cs = "changeset_" + self.pick(["c", "c1", "z9"])
        table = self.pick(TABLES)
        pk = self.key() if self.chance(0.3) else "p"
        ops = []
        for i in range(self.r.choice([0, 1, 2, 3, 5, 101])):
            op = self.pick(["POST", "PUT", "MERGE", "DELETE", "PATCH", "GET"])
            rk = self.pick(["1", "2", "3", str(i)])
            if op == "POST":
                url = "http://%s/%s/%s" % (host, ACCOUNT, table)
            else:
                url = "http://%s/%s/%s(PartitionKey='%s',RowKey='%s')" % (host, ACCOUNT, table, pk, rk)
            if self.chance(0.1):
                url = self.pick(["/%s/%s" % (ACCOUNT, table), "http://other/x/y", "", "garbage",
                                 url.replace(ACCOUNT, "other"), url + "?$top=1"])
            hdrs = ["%s %s HTTP/1.1" % (op, url), "Accept: application/json;odata=nometadata"]
            body = ""
            if op in ("POST", "PUT", "MERGE", "PATCH"):
                hdrs.append("Content-Type: application/json")
                body = self.entity(pk, rk)
            if op in ("DELETE", "MERGE", "PUT") and self.chance(0.7):
                hdrs.append("If-Match: *")
            if self.chance(0.3):
                hdrs.append("Content-ID: %d" % self.r.randrange(3))
            part = "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" + \
                   "\r\n".join(hdrs) + "\r\n\r\n" + body + "\r\n"
            ops.append(part)
        layout = self.r.randrange(8)
        out = []
        if layout == 0:         # parts outside any change set
            for p in ops:
                out.append("--%s\r\n%s" % (b, p))
        elif layout == 1:       # two change sets
            half = len(ops) // 2
            for grp, name in ((ops[:half], cs), (ops[half:], cs + "2")):
                inner = "".join("--%s\r\n%s" % (name, p) for p in grp) + "--%s--\r\n" % name
                out.append("--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n%s" % (b, name, inner))
        else:
            inner = "".join("--%s\r\n%s" % (cs, p) for p in ops) + "--%s--\r\n" % cs
            out.append("--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n%s" % (b, cs, inner))
        text = "".join(out) + "--%s--\r\n" % b
        m = self.r.randrange(14)
        if m == 0:
            text = text.replace("--" + cs, "--" + cs + "JUNK", 1)
        elif m == 1:
            text = text.replace("--" + b + "--", "", 1)
        elif m == 2:
            text = text.replace("\r\n", "\n")
        elif m == 3:
            text = text[:self.r.randrange(len(text) + 1)]
        elif m == 4:
            text = text.replace("--" + b, "--" + b + "1", 1)
        elif m == 5:
            text = text.replace("Content-Type: application/http\r\n", "", 1)
        elif m == 6:
            text = text.replace("HTTP/1.1", "HTTP/9.9", 1)
        elif m == 7:
            text = text.replace("boundary=" + cs, "boundary=", 1)
        elif m == 8:
            # a change set nested in a change set
            text = text.replace("--%s\r\n" % cs, "--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n--%s\r\n"
                                % (cs, cs, cs), 1)
        ctype = "multipart/mixed; boundary=" + b
        if self.chance(0.1):
            ctype = self.pick(["multipart/mixed", "multipart/mixed; boundary=", "multipart/mixed; boundary=\"%s\"" % b,
                               "multipart/mixed; boundary=" + b[:-1], "application/json",
                               "multipart/mixed; boundary=%s; boundary=x" % b])
        return text, ctype

    # -- one signed request --
    def signed(self):
        """(method, path+query, headers list, body bytes, wire bytes)."""
        kind = self.pick(["tables", "tables", "create", "delete_table", "get_table", "query", "query",
                          "insert", "get", "put", "merge", "delete", "batch", "batch", "service"])
        acct = "/" + ACCOUNT
        method = {"tables": "GET", "create": "POST", "delete_table": "DELETE", "get_table": "GET",
                  "query": "GET", "insert": "POST", "get": "GET", "put": "PUT", "merge": "MERGE",
                  "delete": "DELETE", "batch": "POST", "service": "GET"}[kind]
        t = self.table()
        path = {"tables": acct + "/Tables", "create": acct + "/Tables", "delete_table": acct + "/Tables('%s')" % t,
                "get_table": acct + "/Tables('%s')" % t, "query": acct + "/%s()" % t, "insert": acct + "/" + t,
                "batch": acct + "/$batch", "service": acct + "/"}.get(kind) or acct + "/" + self.entity_path(t)
        if kind == "query" and self.chance(0.2):
            path = acct + "/" + t
        if kind == "service":
            q = "restype=service&comp=" + self.pick(["properties", "stats", "x"])
        else:
            q = self.query("tables" if kind == "tables" else "query" if kind == "query" else "")
        host = "127.0.0.1:%d" % PORT
        if self.chance(0.2):
            # host-style: the account from the Host header, the path without it
            host = ACCOUNT + self.pick([".table.core.windows.net", ".localhost:%d" % PORT, "", ".", ".x" * 300,
                                        "x.table", ":%d" % PORT, ".table.core.windows.net:443"])
            path = path[len(acct):] or "/"
        headers = [("Host", host), ("Accept", self.pick(ACCEPTS) if self.chance(0.2) else ACCEPTS[0])]
        body = b""
        ctype = None
        if kind == "create":
            name = self.table() if self.chance(0.7) else self.pick(["fz" + "%d" % self.r.randrange(20), "a", "1t"])
            body = self.pick([json.dumps({"TableName": name}), '{"TableName":%s}' % json.dumps(self.json_value()),
                              '{"TableName":"fzA","TableName":"fzB"}', "{}", "", "garbage"]).encode("utf-8", "surrogatepass")
            ctype = "application/json"
        elif kind in ("insert", "put", "merge"):
            body = self.entity().encode("utf-8", "surrogatepass")
            ctype = "application/json"
        elif kind == "batch":
            text, ctype = self.batch(host)
            body = text.encode("utf-8", "surrogatepass")
        # header mutations
        if ctype is not None and self.chance(0.9):
            headers.append(("Content-Type", ctype if self.chance(0.85) else self.pick(CTYPES)))
        elif self.chance(0.1):
            headers.append(("Content-Type", self.pick(CTYPES)))
        if self.chance(0.3):
            headers.append(("Prefer", self.pick(PREFERS)))
        if kind in ("put", "merge", "delete") and self.chance(0.8) or self.chance(0.05):
            headers.append(("If-Match", self.pick(IF_MATCH)))
        if self.chance(0.1):
            headers.append(("X-HTTP-Method", self.pick(XMETHODS)))
            if self.chance(0.7):
                method = "POST"
        if self.chance(0.05):
            method = self.pick(["GET", "POST", "PUT", "MERGE", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE",
                                "get", "M" * 40])
        if self.chance(0.3):
            headers.append(("x-ms-version", self.pick(["2019-02-02", "2015-12-11", "garbage", ""])))
        if self.chance(0.2):
            headers.append(("x-ms-client-request-id", self.pick(["abc", "", "x" * 2000, "\u00e9"])))
        if self.chance(0.05):
            headers.append(("DataServiceVersion", self.pick(["3.0;NetFx", "1.0", "x"])))
        if self.chance(0.1):
            headers.append(self.pick(headers))            # a duplicate
        if self.chance(0.03):
            headers.append(("Content-MD5", self.pick(["", "abc", base64.b64encode(hashlib.md5(body).digest()).decode()])))
        if self.chance(0.03):
            headers.append(("Expect", "100-continue"))
        target = path + ("?" + q if q else "")
        headers = self.sign(method, path, q, headers)
        return method, target, headers, body

    def sign(self, method, path, q, headers):
        """Add the date and a Shared Key or Shared Key Lite signature."""
        d = rfc1123()
        first = {}
        for k, v in headers:
            first.setdefault(k.lower(), v)
        res = "/" + ACCOUNT + path
        m = re.search(r"(?:^|&)comp=([^&]*)", q)
        if m:
            res += "?comp=" + m.group(1)
        hdrs = list(headers) + [("x-ms-date", d)]
        if self.chance(0.5):
            auth = "SharedKeyLite %s:%s" % (ACCOUNT, b64sig("%s\n%s" % (d, res)))
        else:
            sts = "%s\n%s\n%s\n%s\n%s" % (method, first.get("content-md5", ""), first.get("content-type", ""), d, res)
            auth = "SharedKey %s:%s" % (ACCOUNT, b64sig(sts))
        hdrs.append(("Authorization", auth))
        return hdrs

    # -- raw framing --
    def signed_bytes(self, method="GET", path=None, body=b"", extra=()):
        path = path or "/%s/Tables" % ACCOUNT
        h = [("Host", "127.0.0.1:%d" % PORT), ("Accept", ACCEPTS[0])] + list(extra)
        if body:
            h.append(("Content-Type", "application/json"))
        h = self.sign(method, path.split("?")[0], path.partition("?")[2], h)
        lines = ["%s %s HTTP/1.1" % (method, path)] + ["%s: %s" % kv for kv in h]
        if body:
            lines.append("Content-Length: %d" % len(body))
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    def framing(self):
        """(description, list of byte chunks, close_early)."""
        good = self.signed_bytes()
        ent = ('{"PartitionKey":"f","RowKey":"%d","n":1}' % self.r.randrange(5)).encode()
        post = self.signed_bytes("POST", "/%s/fzA" % ACCOUNT, ent)
        k = self.r.randrange(26)
        if k == 0:
            return "bad request line", [self.pick([b"GET\r\n\r\n", b"GET / HTTP/1.1 x\r\n\r\n", b"GET  / HTTP/1.1\r\n\r\n",
                                                   b"GET / HTTP/2.0\r\n\r\n", b"GET /\r\n\r\n", b"GET / http/1.1\r\n\r\n",
                                                   b"G\x00T / HTTP/1.1\r\n\r\n", b"\r\n\r\nGET / HTTP/1.1\r\n\r\n",
                                                   b"M" * 5000 + b" / HTTP/1.1\r\n\r\n", b" / HTTP/1.1\r\n\r\n",
                                                   b"GET * HTTP/1.1\r\nHost: x\r\n\r\n",
                                                   b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n",
                                                   b"GET http://127.0.0.1/devstoreaccount1/Tables HTTP/1.1\r\nHost: x\r\n\r\n",
                                                   b"GET /%s/Tables HTTP/1.0\r\n\r\n" % ACCOUNT.encode(),
                                                   b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 64])], False
        if k == 1:      # header folding
            return "header folding", [good.replace(b"\r\nAccept:", b"\r\nX-A: b\r\n  folded\r\nAccept:", 1)], False
        if k == 2:
            return "folded Authorization", [good.replace(b"Authorization: ", b"Authorization:\r\n ", 1)], False
        if k == 3:
            return "bare LF", [good.replace(b"\r\n", b"\n")], False
        if k == 4:
            return "bare CR", [good.replace(b"\r\n", b"\r", 2)], False
        if k == 5:
            pos = self.r.randrange(len(good))
            return "NUL at %d" % pos, [good[:pos] + b"\x00" + good[pos:]], False
        if k == 6:
            return "NUL in header value", [good.replace(b"Accept: ", b"Accept: app\x00lication/json", 1)], False
        if k == 7:      # chunked body garbage
            chunk = self.pick([b"ZZ\r\n", b"-1\r\n", b"ffffffffffffffffffff\r\n", b"5\r\nabc\r\n", b"5;ext=1\r\nabcde\r\n0\r\n\r\n",
                               b"3\r\nabc\r\n0\r\nTrailer: x\r\n\r\n", b"0x5\r\nabcde\r\n0\r\n\r\n", b"\r\n",
                               b"%x\r\n%s\r\n0\r\n\r\n" % (len(ent), ent), b"1\r\n{\r\n1\r\n}\r\n0\r\n\r\n",
                               b"5\nabcde\n0\n\n", b"100000000\r\n"])
            head = post.split(b"\r\n\r\n")[0].replace(b"Content-Length: %d" % len(ent), b"Transfer-Encoding: chunked")
            return "chunked %r" % chunk[:20], [head + b"\r\n\r\n" + chunk], False
        if k == 8:
            head = post.split(b"\r\n\r\n")[0] + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
            return "chunked and Content-Length", [head + b"%x\r\n%s\r\n0\r\n\r\n" % (len(ent), ent)], False
        if k == 9:
            te = self.pick([b"gzip", b"chunked, identity", b"identity", b"chunked\x00", b" chunked", b"CHUNKED"])
            head = post.split(b"\r\n\r\n")[0].replace(b"Content-Length: %d" % len(ent), b"Transfer-Encoding: " + te)
            return "Transfer-Encoding %r" % te, [head + b"\r\n\r\n" + b"%x\r\n%s\r\n0\r\n\r\n" % (len(ent), ent)], False
        if k == 10:     # Content-Length lies
            lie = self.pick([b"0", b"1", b"5", b"-1", b"+40", b" 40", b"4O", b"99999999999999999999",
                             b"18446744073709551616", b"0x10", str(len(ent) * 2).encode()])
            return "Content-Length %r" % lie, [post.replace(b"Content-Length: %d" % len(ent), b"Content-Length: " + lie)], \
                self.chance(0.5)
        if k == 11:
            return "two Content-Lengths", [post.replace(b"Content-Length: %d" % len(ent), b"Content-Length: %d\r\nContent-Length: %d"
                                                        % (len(ent), self.pick([len(ent), 3, len(ent) + 1])))], False
        if k == 12:     # pipelining
            n = self.r.randrange(2, 6)
            reqs = [self.pick([good, post, self.signed_bytes("GET", "/%s/fzA()?$top=2" % ACCOUNT)]) for _ in range(n)]
            return "pipeline of %d" % n, [b"".join(reqs)], False
        if k == 13:
            return "pipeline with garbage", [good + b"GARBAGE\r\n\r\n" + good], False
        if k == 14:     # early close
            cut = self.r.randrange(1, len(post))
            return "early close at %d" % cut, [post[:cut]], True
        if k == 15:
            return "close right after the request", [post], True
        if k == 16:
            return "byte by byte", [bytes([c]) for c in good[:200]] + [good[200:]], False
        if k == 17:
            return "Expect 100-continue", [post.replace(b"\r\n\r\n", b"\r\nExpect: 100-continue\r\n\r\n", 1)], False
        if k == 18:
            return "Expect garbage", [good.replace(b"\r\n\r\n", b"\r\nExpect: 200-ok\r\n\r\n", 1)], False
        if k == 19:
            return "header without colon", [good.replace(b"\r\n\r\n", b"\r\nNoColon\r\n\r\n", 1)], False
        if k == 20:
            return "space before colon", [good.replace(b"Authorization:", b"Authorization :", 1)], False
        if k == 21:
            return "empty header name", [good.replace(b"\r\n\r\n", b"\r\n: v\r\n\r\n", 1)], False
        if k == 22:
            return "duplicate Authorization", [good.replace(b"\r\n\r\n", b"\r\nAuthorization: SharedKeyLite %s:AAAA\r\n\r\n"
                                                            % ACCOUNT.encode(), 1)], False
        if k == 23:
            return "duplicate Host", [good.replace(b"\r\n\r\n", b"\r\nHost: %s.table.x\r\n\r\n" % ACCOUNT.encode(), 1)], False
        if k == 24:
            return "body on GET", [good.replace(b"\r\n\r\n", b"\r\nContent-Length: 5\r\n\r\nhello", 1)], False
        pos = self.r.randrange(len(good))
        return "byte flip at %d" % pos, [good[:pos] + bytes([self.r.randrange(256)]) + good[pos + 1:]], False

    def next(self):
        """The next test case: (kind, description, chunks, close_early, signed_complete, method)."""
        if self.chance(0.75):
            method, target, headers, body = self.signed()
            head = ["%s %s HTTP/1.1" % (method, target)] + ["%s: %s" % (k, v) for k, v in headers]
            if body or method in ("POST", "PUT", "MERGE", "PATCH"):
                head.append("Content-Length: %d" % len(body))
            wire = ("\r\n".join(head) + "\r\n\r\n").encode("utf-8", "surrogatepass") + body
            return "signed", "%s %s" % (method, target[:150]), [wire], False, True, method
        desc, chunks, early = self.framing()
        return "framing", desc, chunks, early, False, "GET"


# ---- sending and checking ---------------------------------------------------

TOKEN = re.compile(rb"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

# libmicrohttpd 0.9.75 (Debian 12) sends the status line and headers of its
# own answer to a malformed Content-Length twice (a bare libmicrohttpd server
# does the same).  Such a response is not well-formed, but the gateway cannot
# change it: it is counted and printed, and fails the run only with
# FUZZ_HTTP_STRICT=1.
STRICT = os.environ.get("FUZZ_HTTP_STRICT") == "1"
known_doubled = []


def parse_responses(buf, methods):
    """Parse the responses in BUF: (list of (status, headers, body), rest,
    error).  ERROR is set if what is there is not well-formed HTTP."""
    out = []
    while buf:
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if not b"HTTP/1.1 ".startswith(buf[:9]) and not buf.startswith(b"HTTP/1."):
                return out, buf, "not a status line: %r" % buf[:80]
            return out, buf, None
        if buf[end + 4:].startswith(buf[:end + 4]) and not STRICT and \
                re.search(rb"\r\nContent-Length: [0-9]+\r\n", buf[:end + 4]) and \
                b"Content-Length</b> header" in buf:
            known_doubled.append(buf[:end].split(b"\r\n")[0])
            buf = buf[end + 4:]
            continue
        lines = buf[:end].split(b"\r\n")
        m = re.match(rb"^HTTP/1\.[01] ([1-5][0-9][0-9]) [^\r\n\x00]*$", lines[0])
        if not m:
            return out, buf, "bad status line %r" % lines[0][:80]
        status = int(m.group(1))
        hdrs = {}
        for ln in lines[1:]:
            name, sep, val = ln.partition(b":")
            if not sep or not TOKEN.match(name) or b"\n" in ln or b"\r" in ln:
                return out, buf, "bad header line %r" % ln[:80]
            hdrs.setdefault(name.lower().decode(), []).append(val.strip().decode("latin-1"))
        rest = buf[end + 4:]
        if status == 100:
            buf = rest
            continue
        cl = hdrs.get("content-length")
        te = hdrs.get("transfer-encoding")
        if cl and te:
            return out, buf, "both Content-Length and Transfer-Encoding"
        if cl and (len(set(cl)) > 1 or not cl[0].isdigit()):
            return out, buf, "bad Content-Length %r" % cl
        method = methods[len(out)] if len(out) < len(methods) else "GET"
        if method == "HEAD" or status in (204, 304):
            body = b""
        elif te:
            if te[-1].lower() != "chunked":
                return out, buf, "Transfer-Encoding %r" % te
            body = b""
            pos = 0
            while True:
                e = rest.find(b"\r\n", pos)
                if e < 0:
                    return out, buf, None
                size = rest[pos:e].split(b";")[0]
                if not re.match(rb"^[0-9a-fA-F]+$", size):
                    return out, buf, "bad chunk size %r" % size[:20]
                n = int(size, 16)
                if n == 0:
                    t = rest.find(b"\r\n\r\n", e)
                    if t < 0 and rest[e:e + 4] != b"\r\n\r\n":
                        return out, buf, None
                    rest = rest[(t if t >= 0 else e) + 4:]
                    break
                if len(rest) < e + 2 + n + 2:
                    return out, buf, None
                body += rest[e + 2:e + 2 + n]
                if rest[e + 2 + n:e + 4 + n] != b"\r\n":
                    return out, buf, "chunk not followed by CRLF"
                pos = e + 4 + n
        elif cl:
            n = int(cl[0])
            if len(rest) < n:
                return out, buf, None
            body, rest = rest[:n], rest[n:]
        else:
            # no length: only a close can end it; not what the gateway does
            return out, buf, "response without a length (status %d)" % status
        ctype = (hdrs.get("content-type") or [""])[0]
        if body and ctype.startswith("application/json"):
            try:
                json.loads(body)
            except ValueError as e:
                return out, buf, "JSON body that is not JSON (%s): %r" % (e, body[:200])
        out.append((status, hdrs, body))
        buf = rest
    return out, buf, None


def send_case(chunks, close_early, expect_answer, methods):
    """Send CHUNKS on a new connection; (responses, error, connect_failed)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", PORT))
        if TLS is not None:
            s = TLS.wrap_socket(s, server_hostname="127.0.0.1")
    except OSError as e:
        s.close()
        return [], "connect: %s" % e, True
    buf = b""
    got = []
    err = None
    try:
        for c in chunks:
            try:
                s.sendall(c)
            except OSError:
                break           # the gateway may close on garbage: read its answer
        if close_early:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            return [], None, False
        # a complete signed request must be answered; a framing case may
        # leave the gateway waiting for more: give up on it after a second
        # without a byte
        deadline = time.monotonic() + (ANSWER_TIMEOUT if expect_answer else 1.0)
        while True:
            if buf:
                deadline = max(deadline, time.monotonic() + 1.0)
            left = deadline - time.monotonic()
            if left <= 0:
                if expect_answer and not got:
                    err = "no answer within %.0f s" % ANSWER_TIMEOUT
                elif buf:
                    err = "incomplete response: %r" % buf[:120]
                break
            # once an answer is in, wait only briefly for more (pipelining)
            s.settimeout(min(left, 0.1 if got and not buf else left))
            try:
                b = s.recv(1 << 16)
            except socket.timeout:
                if got and not buf:
                    break
                continue
            except OSError:
                b = b""
            if not b:
                if buf:
                    err = "connection closed inside a response: %r" % buf[:120]
                break
            buf += b
            more, buf, perr = parse_responses(buf, methods[len(got):])
            got.extend(more)
            if perr:
                err = perr
                break
            if expect_answer and got and not buf and len(got) >= len(methods):
                break
    finally:
        s.close()
    return got, err, False


def alive():
    """Does the gateway answer a signed list of tables?"""
    g = Gen(0)
    got, err, cf = send_case([g.signed_bytes()], False, True, ["GET"])
    return bool(got) and got[0][0] in (200, 503), err


def server_log_size():
    try:
        return os.path.getsize(SERVER_LOG) if SERVER_LOG else 0
    except OSError:
        return 0


def server_log_caught_up(offset):
    """wait (at most 10 s) until the server log holds what the run caused: a
    LOG line written by a new session, which the server accepts only after
    the backends of the answered requests have logged their errors and
    after a crash's restart (whose lines come before); false if it cannot
    tell (no psql, no server in the environment)"""
    if not SERVER_LOG:
        return True
    marker = "fuzz_http: end of run %d.%d" % (os.getpid(), time.time_ns())
    try:
        subprocess.run(["psql", "-X", "-q", "-d", "postgres", "-c",
                        "DO $$BEGIN RAISE LOG '%s'; END$$" % marker],
                       check=True, timeout=30, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(SERVER_LOG, "rb") as f:
                f.seek(offset)
                if marker.encode() in f.read():
                    return True
        except OSError:
            return False
        time.sleep(0.05)
    return False


def server_log_errors(offset):
    """XX000 errors and killed backends in the server log after OFFSET."""
    if not SERVER_LOG:
        return []
    try:
        with open(SERVER_LOG, "rb") as f:
            f.seek(offset)
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError as e:
        return ["cannot read %s: %s" % (SERVER_LOG, e)]
    out = []
    for i, ln in enumerate(lines):
        if re.search(r"ERROR:\s+XX000|was terminated by signal|PANIC:|^TRAP:", ln):
            out.append("\n    ".join(lines[i:i + 4])[:800])
    return out


def main():
    print("fuzz_http: seed %d (FUZZ_HTTP_SEED=%d to repeat, FUZZ_HTTP_SEED=random for a new one), %.0f s, port %d" % (SEED, SEED, SECONDS, PORT), flush=True)
    if not SERVER_LOG:
        print("fuzz_http: TS_SERVER_LOG not set: the server log is not checked for XX000", flush=True)
    log_start = server_log_size()
    gen = Gen(SEED)
    hist = {}
    kinds = {}
    failures = []
    n = 0
    start = time.monotonic()
    dead = False
    # the tables most requests use
    for t in TABLES:
        body = json.dumps({"TableName": t}).encode()
        send_case([gen.signed_bytes("POST", "/%s/Tables" % ACCOUNT, body)], False, True, ["POST"])
    replay = int(REPLAY) if REPLAY is not None else None
    recent = []             # the last cases sent: one of them may have killed it
    i = 0
    while True:
        if replay is None and time.monotonic() - start >= SECONDS:
            break
        kind, desc, chunks, early, signed, method = gen.next()
        i += 1
        if replay is not None and i - 1 != replay:
            if i - 1 > replay:
                break
            continue
        methods = [method]
        if desc.startswith("pipeline of"):
            methods = ["GET"] * int(desc.split()[-1])
        got, err, cf = send_case(chunks, early, signed, methods)
        n += 1
        recent = recent[-2:] + [(i - 1, kind, desc, chunks)]
        kinds[kind] = kinds.get(kind, 0) + 1
        for st, hdrs, body in got:
            code = (hdrs.get("x-ms-error-code") or [""])[0]
            key = "%d %s" % (st, code) if code else str(st)
            hist[key] = hist.get(key, 0) + 1
            # 503 ServerBusy/timeouts are answers; 501 is the gateway's
            # answer to operations it does not serve (table ACLs), 505 to
            # an HTTP version other than 1.x
            if st >= 500 and st not in (501, 503, 505):
                err = err or "status %d %s: %r" % (st, code, body[:300])
        if not got:
            hist["(no answer)"] = hist.get("(no answer)", 0) + 1
        if replay is not None:
            print("request %d (%s %s): %r" % (replay, kind, desc, b"".join(chunks)[:3000]))
            for st, hdrs, body in got:
                print("  -> %d %s %r" % (st, hdrs.get("x-ms-error-code"), body[:500]))
        if cf or err:
            ok, aerr = alive()
            if not ok:
                for r in recent[:-1]:
                    failures.append(r + ("sent just before the gateway stopped answering",))
                failures.append((i - 1, kind, desc, chunks, "the gateway does not answer any more (%s)" % (aerr or err)))
                dead = True
                break
        if err:
            failures.append((i - 1, kind, desc, chunks, err))
            if len(failures) >= 50:
                break
        if n % 500 == 0 and not alive()[0]:
            failures.append((i - 1, kind, desc, chunks, "the gateway does not answer any more"))
            dead = True
            break
    elapsed = time.monotonic() - start
    if not dead and replay is None:
        ok, aerr = alive()
        if not ok:
            failures.append((i - 1, "-", "at the end", [], "the gateway does not answer any more (%s)" % aerr))
    if not server_log_caught_up(log_start):
        print("fuzz_http: no marker in the server log: its last lines may be missing from the check", flush=True)
    log_errs = server_log_errors(log_start)

    print("fuzz_http: %d requests in %.1f s (%s)" % (n, elapsed, ", ".join("%s %d" % kv for kv in sorted(kinds.items()))))
    print("fuzz_http: statuses: " + ", ".join("%s: %d" % kv for kv in sorted(hist.items(), key=lambda kv: -kv[1])))
    for idx, kind, desc, chunks, err in failures:
        wire = b"".join(chunks)
        print("FAIL request %d (%s: %s): %s\n  FUZZ_HTTP_SEED=%d FUZZ_HTTP_REPLAY=%d\n  %r%s" % (
            idx, kind, desc, err, SEED, idx, wire[:1500], " ... (%d bytes)" % len(wire) if len(wire) > 1500 else ""))
    if known_doubled:
        print("fuzz_http: KNOWN libmicrohttpd defect, not counted (FUZZ_HTTP_STRICT=1 counts it): %d answers to a "
              "malformed Content-Length had their status line and headers twice (%r)"
              % (len(known_doubled), known_doubled[0]))
    for e in log_errs:
        print("FAIL in the server log: " + e)
    if failures or log_errs:
        print("fuzz_http: %d failures, %d server log errors (seed %d)" % (len(failures), len(log_errs), SEED))
        return 1
    print("fuzz_http: no failure (seed %d)" % SEED)
    return 0


if __name__ == "__main__":
    sys.exit(main())
