#!/usr/bin/python3
"""test/gateway/batch_parity_test.py: an operation inside a batch means what
the same request alone means (the outside attack on the restructured
gateway, its findings 1, 2, 4 and 5), against the gateway of
test/t/010_gateway.pl (GW_PORT, GW_DEV_KEY; account devstoreaccount1).

  - DELETE without If-Match: alone 400 MissingRequiredHeader, in a change
    set the operation's 400 MissingRequiredHeader; the entity stays;
  - If-Match with blanks around it: the same entity tag alone and in a batch;
  - X-HTTP-Method on a POST: MERGE, PATCH, PUT and DELETE alone and in a
    change set alike;
  - a change set sent to the primary whose URL names <account>-secondary is
    refused, nothing written;
  - percent-encoded UTF-8 that is not well formed (a surrogate, an overlong
    form, a code point above U+10FFFF) is the gateway's 400 in a query
    parameter, an entity key and a sub-request's URL;
  - the batch's query form (a lone GET outside a change set) honours its
    URL's $select and its Accept (nometadata, minimalmetadata,
    fullmetadata) as the same GET alone does: the same entity JSON, the
    same Content-Type; an Accept offering only Atom is its 415.
"""
import json
import re
import uuid

import gwlib
from gwlib import ACCT, PORT

check = gwlib.Checks("batch_parity_test")
last_etag = None
last_ctype = None


def request(method, path, body=None, headers=None, query=""):
    """a Shared Key Lite request on path (after the account, as sent);
    (status, error code, body); its ETag and Content-Type kept"""
    global last_etag, last_ctype
    st, hdrs, data = gwlib.request(method, path, body, headers, query)
    last_etag = hdrs.get("etag")
    last_ctype = hdrs.get("content-type")
    return st, hdrs.get("x-ms-error-code", ""), data


def batch(parts, url_prefix=None):
    """a change set of (method, path, body, headers); (status, parts' status lines and codes, text)"""
    cs = "changeset_" + uuid.uuid4().hex
    bb = "batch_" + uuid.uuid4().hex
    prefix = url_prefix or f"http://127.0.0.1:{PORT}/{ACCT}"
    out = [f"--{bb}\r\nContent-Type: multipart/mixed; boundary={cs}\r\n\r\n"]
    for method, path, body, headers in parts:
        lines = [f"{method} {prefix}/{path} HTTP/1.1", "Accept: application/json;odata=nometadata",
                 "DataServiceVersion: 3.0"]
        for k, v in (headers or {}).items():
            lines.append(f"{k}: {v}")
        text = json.dumps(body) if body is not None else ""
        if body is not None:
            lines.append("Content-Type: application/json")
            lines.append(f"Content-Length: {len(text.encode())}")
        out.append(f"--{cs}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
                   + "\r\n".join(lines) + "\r\n\r\n" + text + "\r\n")
    out.append(f"--{cs}--\r\n--{bb}--\r\n")
    st, code, text = request("POST", "$batch", "".join(out).encode(),
                             {"Content-Type": f"multipart/mixed; boundary={bb}"})
    inner = [ln.split(" ")[1] for ln in text.split("\r\n") if ln.startswith("HTTP/1.1 ")]
    return st, code, inner, text


def etag_of(table, pk, rk):
    st, _, _ = request("GET", f"{table}(PartitionKey='{pk}',RowKey='{rk}')")
    return last_etag if st == 200 else None


def put(table, rk):
    st, _, _ = request("PUT", f"{table}(PartitionKey='p',RowKey='{rk}')", {"v": 1})
    return st == 204


table = "parity" + uuid.uuid4().hex[:8]
st, _, _ = request("POST", "Tables", {"TableName": table})
check("create table", st == 201, str(st))

# 1. DELETE without If-Match
put(table, "d1")
put(table, "d2")
st, code, _ = request("DELETE", f"{table}(PartitionKey='p',RowKey='d1')")
check("DELETE without If-Match alone", st == 400 and code == "MissingRequiredHeader", f"{st} {code}")
st, code, inner, text = batch([("DELETE", f"{table}(PartitionKey='p',RowKey='d2')", None, {})])
check("DELETE without If-Match in a change set", st == 202 and inner == ["400"] and "MissingRequiredHeader" in text,
      f"{st} {inner} {text[-300:]}")
check("both entities kept", etag_of(table, "p", "d1") is not None and etag_of(table, "p", "d2") is not None)

# 2. If-Match with blanks around it
for blank in (" ", "\t", "  \t"):
    put(table, "w1")
    put(table, "w2")
    st, code, _ = request("DELETE", f"{table}(PartitionKey='p',RowKey='w1')",
                          headers={"If-Match": etag_of(table, "p", "w1") + blank})
    st2, _, inner, text = batch([("DELETE", f"{table}(PartitionKey='p',RowKey='w2')", None,
                                  {"If-Match": etag_of(table, "p", "w2") + blank})])
    check(f"If-Match with {blank!r} after it, alone and in a batch", st == 204 and st2 == 202 and inner == ["204"],
          f"{st} {code} / {st2} {inner}")
put(table, "s1")
st, code, _ = request("PUT", f"{table}(PartitionKey='p',RowKey='s1')", {"v": 2}, {"If-Match": " * "})
st2, _, inner, _ = batch([("PUT", f"{table}(PartitionKey='p',RowKey='s1')", {"v": 3}, {"If-Match": " * "})])
check("If-Match ' * ' alone and in a batch", st == 204 and inner == ["204"], f"{st} {code} / {inner}")

# 3. X-HTTP-Method on a POST
for xm, expect_single, expect_part in (("MERGE", 204, "204"), ("PATCH", 204, "204"), ("PUT", 204, "204")):
    put(table, "x1")
    st, code, _ = request("POST", f"{table}(PartitionKey='p',RowKey='x1')", {"m": xm}, {"X-HTTP-Method": xm})
    st2, _, inner, text = batch([("POST", f"{table}(PartitionKey='p',RowKey='x1')", {"m": xm},
                                  {"X-HTTP-Method": xm})])
    check(f"X-HTTP-Method {xm} alone and in a batch", st == expect_single and inner == [expect_part],
          f"{st} {code} / {st2} {inner} {text[-200:]}")
put(table, "x2")
st2, _, inner, _ = batch([("POST", f"{table}(PartitionKey='p',RowKey='x2')", None,
                           {"X-HTTP-Method": "DELETE", "If-Match": "*"})])
check("X-HTTP-Method DELETE in a batch", inner == ["204"] and etag_of(table, "p", "x2") is None, str(inner))
st2, code, inner, _ = batch([("POST", f"{table}(PartitionKey='p',RowKey='x3')", {"v": 1},
                              {"X-HTTP-Method": "GET"})])
check("X-HTTP-Method GET in a batch is refused", st2 == 400 and etag_of(table, "p", "x3") is None, f"{st2} {code}")

# 4. a sub-request at the secondary, in a batch sent to the primary
st2, code, inner, _ = batch([("POST", table, {"PartitionKey": "p", "RowKey": "sec"}, {})],
                            url_prefix=f"http://127.0.0.1:{PORT}/{ACCT}-secondary")
check("a change set naming the secondary is refused", st2 == 400 and etag_of(table, "p", "sec") is None,
      f"{st2} {code} {inner}")

# 5. percent-encoded UTF-8 that is not well formed
for enc in ("%ED%A0%80", "%E0%81%81", "%F4%90%80%80", "%C0%80", "%F0%80%80%80"):
    st, code, _ = request("GET", f"{table}()", query=f"x={enc}")
    check(f"{enc} in a query parameter", st == 400 and code != "", f"{st} {code}")
    st, code, body = request("GET", f"{table}(PartitionKey='{enc}',RowKey='x')")
    check(f"{enc} in a key is the gateway's 400", st == 400 and "invalid byte sequence" not in body,
          f"{st} {code} {body[:200]}")
    st2, code, inner, _ = batch([("POST", f"{table}(PartitionKey='{enc}',RowKey='x')", {"v": 1},
                                  {"X-HTTP-Method": "MERGE"})])
    check(f"{enc} in a sub-request's URL", st2 == 400, f"{st2} {code} {inner}")
for ok in ("%E2%82%AC", "%F0%9F%98%80", "%ED%9F%BF", "%EE%80%80"):
    st, code, _ = request("GET", f"{table}(PartitionKey='{ok}',RowKey='x')")
    check(f"{ok} (well formed) is a key", st == 404, f"{st} {code}")

# 6. the batch's query form: $select and Accept as alone
def batch_query(path, accept, query=""):
    """a batch whose one part is a GET outside a change set; (status, part status, part ctype, body)"""
    bb = "batch_" + uuid.uuid4().hex
    url = f"http://127.0.0.1:{PORT}/{ACCT}/{path}" + (f"?{query}" if query else "")
    body = (f"--{bb}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
            f"GET {url} HTTP/1.1\r\nAccept: {accept}\r\nDataServiceVersion: 3.0\r\n\r\n\r\n--{bb}--\r\n")
    st, _, text = request("POST", "$batch", body.encode(), {"Content-Type": f"multipart/mixed; boundary={bb}"})
    m = re.search(r"HTTP/1\.1 (\d+) .*?Content-Type: ([^\r]*)\r\n\r\n([^\r]*)\r\n", text, re.S)
    return (st, m.group(1), m.group(2), m.group(3)) if m else (st, None, None, text)


st, _, _ = request("PUT", f"{table}(PartitionKey='p',RowKey='q1')",
                   {"v": 1, "n": "x", "big": "12", "big@odata.type": "Edm.Int64"})
check("the entity to query", st == 204, str(st))
for level in ("nometadata", "minimalmetadata", "fullmetadata"):
    accept = f"application/json;odata={level}"
    for sel in ("", "$select=v,big,Missing", "$select=RowKey,n"):
        path = f"{table}(PartitionKey='p',RowKey='q1')"
        st, _, alone = request("GET", path, headers={"Accept": accept}, query=sel)
        ctype = last_ctype
        st2, part, pctype, pbody = batch_query(path, accept, sel)
        try:
            same = json.loads(alone) == json.loads(pbody)
        except ValueError:
            same = False
        check(f"batch query, {level}, {sel or 'no $select'}: as alone",
              st == 200 and st2 == 202 and part == "200" and same and pctype == ctype,
              f"{st} {st2} {part}\n  alone {ctype} {alone}\n  batch {pctype} {pbody}")
st2, part, _, pbody = batch_query(f"{table}(PartitionKey='p',RowKey='q1')", "application/atom+xml")
st, code, _ = request("GET", f"{table}(PartitionKey='p',RowKey='q1')", headers={"Accept": "application/atom+xml"})
check("batch query asking for Atom: its 415, as alone", st == 415 and st2 == 202 and part == "415"
      and code in pbody, f"{st} {code} / {st2} {part} {pbody[:200]}")


# 7. a part's URL as long as alone is refused: 255 names of 100 characters
names = ",".join(f"n{i:03d}" + "x" * 96 for i in range(255))
path = f"{table}(PartitionKey='p',RowKey='q1')"
st, code, _ = request("GET", path, query=f"$select={names}")
st2, part, _, pbody = batch_query(path, "application/json;odata=nometadata", f"$select={names}")
check("a 25 KB URL: 414 InvalidUri alone and as the batch's query", st == 414 and code == "InvalidUri"
      and st2 == 202 and part == "414" and "InvalidUri" in pbody, f"{st} {code} / {st2} {part} {pbody[:200]}")
st2, code, inner, text = batch([("PUT", f"{table}(PartitionKey='p',RowKey='long')?x={'y' * 17000}", {"v": 1}, {})])
check("a 17 KB URL in a change set: the part's 414, nothing written",
      st2 == 202 and inner == ["414"] and "InvalidUri" in text and etag_of(table, "p", "long") is None,
      f"{st2} {code} {inner} {text[-300:]}")
st2, code, inner, text = batch([("PUT", f"{table}(PartitionKey='p',RowKey='long')?x={'y' * 16000}", {"v": 1}, {})])
check("a 16 KB URL in a change set runs", st2 == 202 and inner == ["204"], f"{st2} {code} {inner}")

# 8. repeated list headers in a part are one list, as alone
bb = "batch_" + uuid.uuid4().hex
url = f"http://127.0.0.1:{PORT}/{ACCT}/{path}"
body = (f"--{bb}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
        f"GET {url} HTTP/1.1\r\nAccept: application/json\r\nAccept: application/json;odata=fullmetadata\r\n"
        f"DataServiceVersion: 3.0\r\n\r\n\r\n--{bb}--\r\n")
st2, _, text = request("POST", "$batch", body.encode(), {"Content-Type": f"multipart/mixed; boundary={bb}"})
st, _, alone = request("GET", path, headers={"Accept": "application/json, application/json;odata=fullmetadata"})
ctype = last_ctype
m = re.search(r"HTTP/1\.1 (\d+) .*?Content-Type: ([^\r]*)\r\n\r\n([^\r]*)\r\n", text, re.S)
check("two Accept headers in a part: negotiated as alone", st == 200 and st2 == 202 and m is not None
      and m.group(1) == "200" and m.group(2) == ctype and json.loads(m.group(3)) == json.loads(alone),
      f"{st} {ctype} / {st2} {text[:400]}")
st2, code, inner, text = batch([("POST", table, {"PartitionKey": "p", "RowKey": "pref"},
                                 {"Prefer": "odata.continue-on-error\r\nPrefer: return-no-content"})])
check("two Prefer headers in a part: one list, as alone", st2 == 202 and inner == ["204"]
      and "Preference-Applied: return-no-content" in text, f"{st2} {code} {inner} {text[-300:]}")

request("DELETE", f"Tables('{table}')")
check.finish()
