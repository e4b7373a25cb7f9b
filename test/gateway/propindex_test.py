#!/usr/bin/python3
"""test/gateway/propindex_test.py: property indexes (issue 26 part 1) need
nothing of the gateway: a $filter query through it returns the same
entities and the same pages (with $top and the continuation headers) with
the table's property indexes as without them, against the gateway of
test/t/010_gateway.pl (GW_PORT, GW_DEV_KEY; account devstoreaccount1,
database gwtest; psql on PATH, PGHOST/PGPORT set, as a superuser, which
may index the table the gateway's role owns).
"""
import json
import subprocess
import urllib.parse
import uuid

import gwlib

check = gwlib.Checks("propindex_test")


def psql(sql):
    return subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-d", "gwtest", "-c", sql],
                          capture_output=True, text=True, check=True).stdout.strip()


def pages(table, flt, top):
    """every page of a query as [(PartitionKey, RowKey) ...] lists, following
    the continuation headers"""
    result = []
    npk = nrk = None
    for _ in range(200):
        q = {"$filter": flt, "$top": str(top)}
        if npk is not None:
            q["NextPartitionKey"] = npk
            q["NextRowKey"] = nrk
        st, hdrs, body = gwlib.request("GET", f"{table}()", query=urllib.parse.urlencode(q, quote_via=urllib.parse.quote))
        if not check(f"query {flt!r}", st == 200, f"{st} {body[:200]}"):
            return None
        result.append([(e["PartitionKey"], e["RowKey"]) for e in json.loads(body)["value"]])
        npk = hdrs.get("x-ms-continuation-nextpartitionkey")
        nrk = hdrs.get("x-ms-continuation-nextrowkey")
        if npk is None:
            return result
    check(f"query {flt!r} ends", False)
    return result


table = "pidx" + uuid.uuid4().hex[:8]
st, _, _ = gwlib.request("POST", "Tables", {"TableName": table})
check("create table", st == 201, str(st))
for i in range(120):
    e = {"PartitionKey": f"p{i % 5}", "RowKey": f"{i:04d}", "N": i % 40, "S": f"s{i % 9}",
         "Big": str(i * 1000003), "Big@odata.type": "Edm.Int64"}
    if i % 11 == 0:
        e["N"] = f"text{i}"          # another type: lt and le match it
    st, _, body = gwlib.request("POST", table, e, {"Prefer": "return-no-content"})
    if not check(f"insert {i}", st in (201, 204), f"{st} {body[:200]}"):
        break

FILTERS = ["N eq 7", "N lt 3", "N le 2 or N gt 37", "N ge 10 and N lt 12 and S ne 's1'",
           "S eq 's4'", "S lt 's2' and N gt 30", "Big gt 100000000L", "Big eq 7000021L or N eq 0"]
before = {f: pages(table, f, 4) for f in FILTERS}
for prop, typ in (("N", "Int32"), ("S", "String"), ("Big", "Int64")):
    psql(f"SELECT tablestore.create_property_index('{table}', '{prop}', '{typ}')")
used = [f for f in FILTERS
        if psql(f"SELECT tablestore.explain_query('{table}', $f${f}$f$)->>'access'") == "property index"]
check("the indexes serve the filters", len(used) >= 6, str(used))
for f in FILTERS:
    after = pages(table, f, 4)
    check(f"same pages with the index: {f}", after == before[f] and after is not None,
          f"{before[f]} / {after}")
    check(f"not empty: {f}", sum(len(p) for p in before[f] or []) > 0)

gwlib.request("DELETE", f"Tables('{table}')")
check("delete_table drops the catalog rows",
      psql(f"SELECT count(*) FROM tablestore.property_indexes WHERE relation_name = '{table}'") == "0")
check.finish()
