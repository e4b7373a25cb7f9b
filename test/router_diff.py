#!/usr/bin/env python3
"""test/router_diff.py: a random differential test of the scale-out router.

Writes a script of random calls of the tablestore API (writes of every kind
with keys of ASCII, non-ASCII and supplementary-plane characters over many
partitions, wrong and odd arguments, batches, point reads, queries with
random filters, $select lists, caps, pages with random continuations), which
test/router_diff.sh runs through psql on one node and on a router with
2 shards. The two outputs must be equal once Timestamps and ETags (the
clocks of different servers) are masked: every result, every continuation
and every error (SQLSTATE, message, detail, hint) the same.

    router_diff.py SEED STATEMENTS > script.sql
"""
import json
import random
import sys

seed = int(sys.argv[1])
n = int(sys.argv[2])
rnd = random.Random(seed)

# keys: ASCII, Latin-1, BMP full-width, and supplementary-plane characters
# (which UTF-16 orders before U+E000..U+FFFF but code points after them)
ALPHABET = ["a", "b", "c", "A", "Z", "0", "9", "-", "_", " ", "é", "ü", "ｚ", "＃", "中", "😀", "𝄞", "\U0010FFFD"]
PKS = ["p%d" % i for i in range(24)] + ["é1", "ｚz", "😀a", "𝄞", "a😀", "Ａ"]
TABLES = ["Alpha", "Beta"]
PROPS = ["Age", "Name", "Score", "Active", "When", "Id", "Big", "Blob", "Note"]


def lit(s):
    """an SQL string literal"""
    return "'" + s.replace("'", "''") + "'"


def key():
    return "".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(1, 4)))


def pk():
    return rnd.choice(PKS) if rnd.random() < 0.9 else key()


def value(p):
    r = rnd.random()
    if p == "Age":
        return rnd.randint(0, 99)
    if p == "Name":
        return key()
    if p == "Score":
        return {"v": rnd.choice([0.5, 1.25, -3.0, 1e10]), "t": "Edm.Double"}
    if p == "Active":
        return rnd.random() < 0.5
    if p == "When":
        return {"v": "20%02d-0%d-1%dT0%d:00:00Z" % (rnd.randint(0, 30), rnd.randint(1, 9), rnd.randint(0, 9), rnd.randint(0, 9)),
                "t": "Edm.DateTime"}
    if p == "Id":
        return {"v": "3f2504e0-4f89-11d3-9a0c-0305e82c33%02d" % rnd.randint(0, 99), "t": "Edm.Guid"}
    if p == "Big":
        return {"v": str(rnd.randint(-2**40, 2**40)), "t": "Edm.Int64"}
    if p == "Blob":
        return {"v": rnd.choice(["AQID", "AAAA", ""]), "t": "Edm.Binary"}
    if r < 0.05:
        return {"nested": 1}
    return "n" * rnd.randint(0, 20)


def entity(p=None, r=None, props=True):
    e = {}
    if rnd.random() < 0.97:
        e["PartitionKey"] = p if p is not None else pk()
    if rnd.random() < 0.97:
        e["RowKey"] = r if r is not None else key()
    if props:
        for name in rnd.sample(PROPS, rnd.randint(0, 4)):
            v = value(name)
            if isinstance(v, dict) and "t" in v:
                e[name] = v["v"]
                e[name + "@odata.type"] = v["t"]
            else:
                e[name] = v
    if rnd.random() < 0.02:
        e["Bad Name"] = 1
    return e


def ent_sql(e):
    return lit(json.dumps(e, ensure_ascii=False)) + "::jsonb"


def table():
    r = rnd.random()
    if r < 0.02:
        return lit("Missing")
    if r < 0.03:
        return "NULL"
    return lit(rnd.choice(TABLES))


def literal_for(p):
    v = value(p)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, dict) and "t" in v:
        t = v["t"]
        if t == "Edm.Double":
            return repr(float(v["v"]))
        if t == "Edm.DateTime":
            return "datetime'%s'" % v["v"]
        if t == "Edm.Guid":
            return "guid'%s'" % v["v"]
        if t == "Edm.Int64":
            return v["v"] + "L"
        return "X'00'"
    return "'" + str(v).replace("'", "''") + "'"


def comparison():
    op = rnd.choice(["eq", "ne", "lt", "le", "gt", "ge"])
    r = rnd.random()
    if r < 0.3:
        return "PartitionKey %s '%s'" % (op if rnd.random() < 0.5 else "eq", pk().replace("'", "''"))
    if r < 0.45:
        return "RowKey %s '%s'" % (op, key().replace("'", "''"))
    p = rnd.choice(PROPS)
    return "%s %s %s" % (p, op, literal_for(p))


def filt(depth=0):
    r = rnd.random()
    if r < 0.03:
        return "bad filter ("
    if r < 0.05:
        return "startswith(Name, 'a')"
    if depth < 2 and r < 0.35:
        return "(%s) %s (%s)" % (filt(depth + 1), rnd.choice(["and", "or"]), filt(depth + 1))
    if depth < 2 and r < 0.4:
        return "not (%s)" % filt(depth + 1)
    return comparison()


def filter_sql():
    r = rnd.random()
    if r < 0.15:
        return "NULL"
    if r < 0.45:
        return lit("PartitionKey eq '%s'%s" % (pk().replace("'", "''"), (" and " + filt(1)) if rnd.random() < 0.5 else ""))
    return lit(filt())


def select_sql():
    r = rnd.random()
    if r < 0.6:
        return "NULL"
    if r < 0.63:
        return lit("Age,,Name")
    return lit(",".join(rnd.sample(PROPS + ["PartitionKey", "Timestamp"], rnd.randint(1, 3))))


def top_sql(page):
    r = rnd.random()
    if r < 0.4:
        return "NULL"
    if r < 0.43:
        return rnd.choice(["0", "-1", "1001"])
    return str(rnd.randint(1, 7 if page else 40))


def cont_sql():
    r = rnd.random()
    if r < 0.5:
        return "NULL, NULL"
    if r < 0.52:
        return lit(pk()) + ", NULL"
    return "%s, %s" % (lit(pk()), lit(key()))


def if_match():
    r = rnd.random()
    if r < 0.6:
        return "'*'"
    if r < 0.8:
        return lit("W/\"datetime'2020-01-01T00%3A00%3A00Z'\"")
    return lit(rnd.choice(["bad etag", ""]))


def batch_sql():
    p = pk()
    ops = []
    rows = rnd.sample(["r%d" % i for i in range(8)] + [key() for _ in range(3)], rnd.randint(1, 6))
    for rk in rows:
        op = rnd.choice(["insert", "update", "merge", "insert_or_replace", "insert_or_merge", "delete"])
        e = entity(p if rnd.random() < 0.95 else pk(), rk, props=op not in ("delete",))
        o = {"op": op, "entity": e}
        if op in ("update", "merge", "delete") and rnd.random() < 0.2:
            o["if_match"] = "W/\"datetime'2020-01-01T00%3A00%3A00Z'\""
        ops.append(o)
    if rnd.random() < 0.05:
        ops = [{"op": "retrieve", "entity": {"PartitionKey": p, "RowKey": rows[0]}}]
    return "SELECT * FROM tablestore.execute_batch(%s, %s);" % (table(), lit(json.dumps(ops, ensure_ascii=False)) + "::jsonb")


print("\\set VERBOSITY default")
for t in TABLES:
    print("SELECT tablestore.create_table(%s);" % lit(t))
print("SELECT tablestore.create_table('alpha');")
print("SELECT tablestore.create_table('x');")
# a base load: every partition gets entities
for i in range(300):
    print("SELECT tablestore.insert_or_replace_entity(%s, %s);" % (lit(rnd.choice(TABLES)), ent_sql(entity(rnd.choice(PKS), "r%d" % rnd.randint(0, 9)))))

for i in range(n):
    r = rnd.random()
    if r < 0.12:
        print("SELECT tablestore.insert_entity(%s, %s);" % (table(), ent_sql(entity())))
    elif r < 0.2:
        print("SELECT tablestore.insert_or_replace_entity(%s, %s);" % (table(), ent_sql(entity())))
    elif r < 0.27:
        print("SELECT tablestore.insert_or_merge_entity(%s, %s);" % (table(), ent_sql(entity())))
    elif r < 0.32:
        print("SELECT tablestore.update_entity(%s, %s, %s);" % (table(), ent_sql(entity(r="r%d" % rnd.randint(0, 9))), if_match()))
    elif r < 0.37:
        print("SELECT tablestore.merge_entity(%s, %s, %s);" % (table(), ent_sql(entity(r="r%d" % rnd.randint(0, 9))), if_match()))
    elif r < 0.42:
        print("SELECT tablestore.delete_entity(%s, %s, %s, %s);" % (table(), lit(pk()), lit("r%d" % rnd.randint(0, 9)), if_match()))
    elif r < 0.5:
        print(batch_sql())
    elif r < 0.57:
        print("SELECT tablestore.get_entity(%s, %s, %s, %s);" % (table(), lit(pk()), lit("r%d" % rnd.randint(0, 9)), select_sql()))
    elif r < 0.67:
        print("SELECT * FROM tablestore.query_entities(%s, %s, %s, %s);" % (table(), filter_sql(), select_sql(), top_sql(False)))
    elif r < 0.72:
        print("SELECT * FROM tablestore.query_entities_json(%s, %s, %s, %s);" % (table(), filter_sql(), select_sql(), top_sql(False)))
    elif r < 0.82:
        print("SELECT * FROM tablestore.query_entities_page(%s, %s, %s, %s, %s);" % (table(), filter_sql(), select_sql(), top_sql(True), cont_sql()))
    elif r < 0.87:
        print("SELECT * FROM tablestore.query_entities_page_json(%s, %s, %s, %s, %s);" % (table(), filter_sql(), select_sql(), top_sql(True), cont_sql()))
    elif r < 0.93:
        print("SELECT * FROM tablestore.query_page(%s, %s, %s, %s, %s);" % (table(), filter_sql(), select_sql(), top_sql(True), cont_sql()))
    elif r < 0.95:
        print("SELECT tablestore.explain_query(%s, %s);" % (table(), filter_sql()))
    elif r < 0.97:
        print("SELECT * FROM tablestore.list_tables(%s);" % rnd.choice(["NULL", "'TableName eq ''Alpha'''", "'TableName ge ''B'''", "'bad ('"]))
    else:
        print("SELECT tablestore.validate_entity(%s);" % ent_sql(entity()))
# the end state, whole, in key order
for t in TABLES:
    print("SELECT * FROM tablestore.query_entities(%s);" % lit(t))
