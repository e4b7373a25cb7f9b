#!/usr/bin/python3
"""test/gateway/ttl_test.py: time to live through the gateway (issue 26
part 2, doc/ttl.md), against the gateway of test/t/010_gateway.pl
(GW_PORT, GW_DEV_KEY; account devstoreaccount1, database gwtest; psql on
PATH as a superuser, PGHOST/PGPORT set).

A table made through the gateway gets a time to live of one hour with
set_table_ttl (SQL: the gateway has nothing new but the property).  Its
entities are made to have expired without moving any clock: their stored
Timestamp is set back two hours with SQL (the gateway's pooled sessions
keep their settings, so tablestore.clock_offset is not used here).  Then,
through the gateway, an expired entity is 404 ResourceNotFound for GET,
MERGE, PUT with If-Match, DELETE and a batch's retrieve, absent from a
query, an insert over it is 201 and keeps none of its properties, an
entity with TimeToLive -1 is still there, and a TimeToLive that is not an
Edm.Int32 > 0 or -1 is 400 InvalidInput.
"""
import json
import re
import subprocess
import uuid

import gwlib

check = gwlib.Checks("ttl_test")
table = "ttl" + uuid.uuid4().hex[:8]


def sql(q):
    return subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-d", "gwtest", "-c", q],
                          capture_output=True, text=True, check=True).stdout.strip()


def code(text):
    try:
        return json.loads(text)["odata.error"]["code"]
    except (ValueError, KeyError, TypeError):
        return text[:200]


def key(rk):
    return f"{table}(PartitionKey='p',RowKey='{rk}')"


st, _, _ = gwlib.request("POST", "Tables", {"TableName": table})
check("create table", st == 201, str(st))
for rk, extra in (("plain", {"V": 1}), ("own", {"TimeToLive": 60}), ("never", {"TimeToLive": -1}),
                  ("gone", {"W": 2})):
    st, _, text = gwlib.request("POST", table, dict({"PartitionKey": "p", "RowKey": rk}, **extra))
    check(f"insert {rk}", st == 201, f"{st} {text[:200]}")
sql(f"SELECT tablestore.set_table_ttl('{table}', 3600)")
st, _, text = gwlib.request("POST", table, {"PartitionKey": "p", "RowKey": "bad", "TimeToLive": 0})
check("TimeToLive 0 is 400 InvalidInput", st == 400 and code(text) == "InvalidInput", f"{st} {text[:200]}")
st, _, text = gwlib.request("POST", table, {"PartitionKey": "p", "RowKey": "bad", "TimeToLive": "5"})
check("TimeToLive as a string is 400 InvalidInput", st == 400 and code(text) == "InvalidInput", f"{st} {text[:200]}")

# all live: returned with their TimeToLive, as any property
st, _, text = gwlib.request("GET", key("own"))
check("GET returns TimeToLive", st == 200 and json.loads(text).get("TimeToLive") == 60, f"{st} {text[:200]}")
etag = sql(f"SELECT tablestore.get_entity('{table}', 'p', 'gone')->>'odata.etag'")

# expire them: Timestamps two hours back (the TimeToLive -1 one never expires)
sql(f"UPDATE tablestore_data.{table} SET ts = ts - interval '2 hours'")

st, _, text = gwlib.request("GET", key("plain"))
check("GET of an expired entity is 404", st == 404 and code(text) == "ResourceNotFound", f"{st} {text[:200]}")
st, _, text = gwlib.request("GET", f"{table}()")
rks = sorted(e["RowKey"] for e in json.loads(text).get("value", [])) if st == 200 else None
check("a query returns only the live entity", rks == ["never"], f"{st} {rks}")
st, _, text = gwlib.request("GET", f"{table}()", query="$filter=RowKey%20eq%20'plain'")
check("a point query finds no expired entity", st == 200 and json.loads(text).get("value") == [], f"{st} {text[:200]}")
st, _, text = gwlib.request("MERGE", key("plain"), {"X": 1}, {"If-Match": "*"})
check("MERGE of an expired entity is 404", st == 404 and code(text) == "ResourceNotFound", f"{st} {text[:200]}")
st, _, text = gwlib.request("PUT", key("gone"), {"X": 1}, {"If-Match": etag})
check("PUT with the expired entity's ETag is 404", st == 404 and code(text) == "ResourceNotFound",
      f"{st} {text[:200]}")
st, _, text = gwlib.request("DELETE", key("gone"), headers={"If-Match": "*"})
check("DELETE of an expired entity is 404", st == 404 and code(text) == "ResourceNotFound", f"{st} {text[:200]}")

base = f"http://127.0.0.1:{gwlib.PORT}/{gwlib.ACCT}"
bb = "batch_" + uuid.uuid4().hex
body = (f"--{bb}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
        f"GET {base}/{key('own')} HTTP/1.1\r\nAccept: application/json;odata=nometadata\r\n"
        f"DataServiceVersion: 3.0\r\n\r\n--{bb}--\r\n")
st, _, text = gwlib.request("POST", "$batch", body.encode(), {"Content-Type": f"multipart/mixed; boundary={bb}"})
m = re.search(r"HTTP/1\.1 (\d+) ", text)
check("a batch's retrieve of an expired entity is 404", st == 202 and m and m.group(1) == "404", f"{st} {text[:300]}")

# an insert over an expired entity: 201, none of the old properties; an
# insert-or-merge (MERGE without If-Match) inserts
st, _, text = gwlib.request("POST", table, {"PartitionKey": "p", "RowKey": "plain", "New": 1})
got = json.loads(text) if st == 201 else {}
check("an insert over an expired entity is 201 without the old properties",
      st == 201 and got.get("New") == 1 and "V" not in got, f"{st} {text[:200]}")
st, _, text = gwlib.request("MERGE", key("gone"), {"Merged": 1})
check("insert-or-merge over an expired entity", st == 204, f"{st} {text[:200]}")
st, _, text = gwlib.request("GET", key("gone"))
got = json.loads(text) if st == 200 else {}
check("insert-or-merge kept none of the expired entity's properties",
      got.get("Merged") == 1 and "W" not in got, f"{st} {text[:200]}")
st, _, text = gwlib.request("GET", key("never"))
check("TimeToLive -1 never expires", st == 200, f"{st} {text[:200]}")

st, _, _ = gwlib.request("DELETE", f"Tables('{table}')")
check("delete table", st == 204, str(st))
check.finish()
