#!/usr/bin/python3
"""test/gateway/numbers_test.py: every number the database writes reaches
the client as the database wrote it (the outside attack on the batch
answers, finding 1: json-c's tokener clamped an integer literal beyond
int64 to INT64_MIN/UINT64_MAX, so an Edm.Double 1e20 came back as
18446744073709551615), against the gateway of test/t/010_gateway.pl
(GW_PORT, GW_DEV_KEY; account devstoreaccount1, database gwtest; psql on
PATH, PGHOST/PGPORT set).

Edm.Double edges (1e20, -1e20, the largest and the smallest double, -0.0,
2^63-1, 2^64, a 30-digit integer), Int64 and Int32 edges are stored once
and read back through every answer that carries an entity: the insert
echo, GET, a query page, the batch's query form (a lone GET) and a change
set's insert echo, at nometadata, minimalmetadata and fullmetadata.  Each
property's JSON text must be the text of the same property in
tablestore.get_entity's answer read through SQL; at nometadata, which has
no annotations, an integral Double (an integer literal there) has ".0"
after it, as the service writes a Double with a '.' (spec, Property types).
"""
import json
import re
import subprocess
import uuid

import gwlib
from gwlib import ACCT, PORT

check = gwlib.Checks("numbers_test")
LEVELS = ("nometadata", "minimalmetadata", "fullmetadata")
DOUBLES = ["1e20", "-1e20", "1.7976931348623157e308", "5e-324", "-0.0", "9223372036854775807",
           "18446744073709551616", "123456789012345678901234567890", "2.5", "1.0"]
props = {}
for i, text in enumerate(DOUBLES):
    props[f"d{i}"] = (text, "Edm.Double")
props["i64max"] = ('"9223372036854775807"', "Edm.Int64")
props["i64min"] = ('"-9223372036854775808"', "Edm.Int64")
props["i32max"] = ("2147483647", None)
props["i32min"] = ("-2147483648", None)


def body_text(rk):
    """the entity's JSON with the numbers written literally"""
    parts = ['"PartitionKey":"p"', f'"RowKey":"{rk}"']
    for name, (text, typ) in props.items():
        parts.append(f'"{name}":{text}')
        if typ:
            parts.append(f'"{name}@odata.type":"{typ}"')
    return "{" + ",".join(parts) + "}"


def texts(doc):
    """{property: its value's JSON text} of an entity's JSON: numbers keep
    their text (parse_float/parse_int), strings are re-quoted"""
    o = json.loads(doc, parse_float=lambda s: ("num", s), parse_int=lambda s: ("num", s))
    return {k: (v[1] if isinstance(v, tuple) else json.dumps(v)) for k, v in o.items() if k in props}


def sql_texts(table, rk):
    """the properties' texts in get_entity's answer through SQL"""
    out = subprocess.run(["psql", "-X", "-At", "-d", "gwtest", "-c",
                          f"SELECT tablestore.get_entity('{table}', 'p', '{rk}')"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return texts(out)


def at_level(want, level):
    """what a level shows of SQL's texts: nometadata has no annotations, so
    an integral Double (an integer literal in SQL, annotated Edm.Double) is
    written with ".0", as the service writes 5.0 (spec: a Double is a number
    with a '.')"""
    if level != "nometadata":
        return want
    return {k: (v + ".0" if props[k][1] == "Edm.Double" and re.fullmatch(r"-?[0-9]+", v) else v)
            for k, v in want.items()}


def same(what, got, want):
    diff = {k: (got.get(k), want[k]) for k in want if got.get(k) != want[k]}
    check(what, not diff, f"(got, SQL's): {diff}")


def batch_body(parts_text, changeset):
    bb = "batch_" + uuid.uuid4().hex
    if changeset:
        cs = "changeset_" + uuid.uuid4().hex
        inner = "".join(f"--{cs}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
                        f"{p}\r\n" for p in parts_text)
        body = (f"--{bb}\r\nContent-Type: multipart/mixed; boundary={cs}\r\n\r\n{inner}--{cs}--\r\n"
                f"--{bb}--\r\n")
    else:
        body = "".join(f"--{bb}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
                       f"{p}\r\n" for p in parts_text) + f"--{bb}--\r\n"
    st, hdrs, text = gwlib.request("POST", "$batch", body.encode(),
                                   {"Content-Type": f"multipart/mixed; boundary={bb}"})
    m = re.search(r"HTTP/1\.1 (\d+) .*?\r\n\r\n([^\r]*)\r\n", text, re.S)
    return st, (m.group(1) if m else None), (m.group(2) if m else text)


table = "nums" + uuid.uuid4().hex[:8]
st, _, _ = gwlib.request("POST", "Tables", {"TableName": table})
check("create table", st == 201, str(st))
base = f"http://127.0.0.1:{PORT}/{ACCT}"
for level in LEVELS:
    accept = f"application/json;odata={level}"
    rk = "ins" + level
    st, _, echo = gwlib.request("POST", table, body_text(rk).encode(),
                                {"Content-Type": "application/json", "Accept": accept})
    if not check(f"insert {level}", st == 201, f"{st} {echo[:300]}"):
        continue
    want = sql_texts(table, rk)
    check(f"SQL has every property ({level})", set(want) == set(props), str(want))
    want = at_level(want, level)
    same(f"insert echo, {level}", texts(echo), want)
    key = f"{table}(PartitionKey='p',RowKey='{rk}')"
    st, _, got = gwlib.request("GET", key, headers={"Accept": accept})
    same(f"GET, {level}", texts(got) if st == 200 else {}, want)
    st, _, got = gwlib.request("GET", f"{table}()", headers={"Accept": accept},
                               query=f"$filter=RowKey%20eq%20'{rk}'")
    m = re.search(r'"value":\[(.*)\]', got, re.S)
    same(f"query page, {level}", texts(m.group(1)) if st == 200 and m else {}, want)
    st, part, got = batch_body([f"GET {base}/{key} HTTP/1.1\r\nAccept: {accept}\r\nDataServiceVersion: 3.0\r\n"],
                               False)
    same(f"batch query form, {level}", texts(got) if part == "200" else {}, want)
    rk2 = "cs" + level
    b = body_text(rk2)
    st, part, got = batch_body([f"POST {base}/{table} HTTP/1.1\r\nAccept: {accept}\r\nDataServiceVersion: 3.0\r\n"
                                f"Content-Type: application/json\r\nContent-Length: {len(b)}\r\n\r\n{b}"], True)
    same(f"change set insert echo, {level}", texts(got) if part == "201" else {},
         at_level(sql_texts(table, rk2), level))

gwlib.request("DELETE", f"Tables('{table}')")

# the class: no gateway source reads JSON with json-c's tokener (json.c's
# comments name it); the checkout's gateway/ (TS_CHECKOUT, the cwd)
import glob
for src in glob.glob("gateway/*.c"):
    if src.endswith("/json.c"):
        continue
    with open(src) as f:
        check(f"{src} does not use json_tokener_*", "json_tokener_" not in f.read())
check.finish()
