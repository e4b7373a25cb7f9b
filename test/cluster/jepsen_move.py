#!/usr/bin/python3
"""test/cluster/jepsen_move.py: clients write through the router while
partitions move back and forth between three nodes, with faults; then every
acknowledged write is checked (issue 23).  Run by test/cluster/jepsen_move.sh.

Usage: jepsen_move.py DIR SEED

DIR holds a running cluster (ts_start_cluster DIR 3 8: router, shard0..2)
with table J.  Four clients, each owning its own PartitionKeys (so that each
key's history is the order of one client's acknowledged calls), run
inserts, upserts, merges and replaces with the ETag they hold, deletes with
it, batches of upserts, reads, and queries over every node, recording each
result.  Meanwhile a fixed schedule (from SEED) moves partitions between
the nodes: plain moves, a move whose router session is killed half-way and
which is run again, a move during which the source node is restarted with
-m immediate, a move killed at its cutover, and create_table/delete_table
attempted during moves.  Then it checks:
  - every acknowledged write reads back with its value and its ETag, and no
    key reads back that was deleted (or never written);
  - no write that failed with a definite error changed anything (the model
    is only changed by acknowledged writes; an ambiguous failure, a node
    lost during the call, is resolved by reading the key, which must hold
    the old or the new value);
  - a conditional write refused (UpdateConditionNotSatisfied) only when the
    key's ETag had changed, and every acknowledged write gave a new ETag;
  - no query over every node returned an entity twice, and the final one
    returns exactly the model's entities;
  - every move finished; every entity is on the node of its partition;
  - a table operation during a move was refused (ServerBusy) or done, and
    the tables are on every node alike.
It prints the counts and exits 1 on any anomaly.
"""
import ctypes
import ctypes.util
import json
import os
import random
import subprocess
import sys
import threading
import time

_pq = ctypes.CDLL(ctypes.util.find_library("pq") or "libpq.so.5")
_pq.PQconnectdb.restype = ctypes.c_void_p
_pq.PQconnectdb.argtypes = [ctypes.c_char_p]
_pq.PQstatus.argtypes = [ctypes.c_void_p]
_pq.PQfinish.argtypes = [ctypes.c_void_p]
_pq.PQerrorMessage.restype = ctypes.c_char_p
_pq.PQerrorMessage.argtypes = [ctypes.c_void_p]
_pq.PQexec.restype = ctypes.c_void_p
_pq.PQexec.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_pq.PQresultStatus.argtypes = [ctypes.c_void_p]
_pq.PQresultErrorField.restype = ctypes.c_char_p
_pq.PQresultErrorField.argtypes = [ctypes.c_void_p, ctypes.c_int]
_pq.PQntuples.argtypes = [ctypes.c_void_p]
_pq.PQnfields.argtypes = [ctypes.c_void_p]
_pq.PQgetvalue.restype = ctypes.c_char_p
_pq.PQgetvalue.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
_pq.PQgetisnull.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
_pq.PQclear.argtypes = [ctypes.c_void_p]


class Result:
    """ok, rows (lists of text or None), sqlstate, message, detail"""

    def __init__(self, ok, rows=None, state=None, msg="", detail=""):
        self.ok, self.rows, self.state, self.msg, self.detail = ok, rows or [], state, msg, detail

    def service_code(self):
        d = self.detail or ""
        i = d.find("Table service error code: ")
        return d[i + 26:].rstrip(".") if i >= 0 else None


class Conn:
    """one libpq connection, reconnected when lost"""

    def __init__(self, conninfo):
        self.conninfo = conninfo.encode()
        self.c = None

    def run(self, sql):
        if self.c is None or _pq.PQstatus(self.c) != 0:
            if self.c:
                _pq.PQfinish(self.c)
            self.c = _pq.PQconnectdb(self.conninfo)
            if _pq.PQstatus(self.c) != 0:
                return Result(False, state="08001", msg=_pq.PQerrorMessage(self.c).decode(errors="replace"))
        res = _pq.PQexec(self.c, sql.encode())
        if not res:
            return Result(False, state="08006", msg=_pq.PQerrorMessage(self.c).decode(errors="replace"))
        st = _pq.PQresultStatus(res)
        if st in (1, 2):
            rows = [[None if _pq.PQgetisnull(res, i, j) else _pq.PQgetvalue(res, i, j).decode()
                     for j in range(_pq.PQnfields(res))] for i in range(_pq.PQntuples(res))]
            _pq.PQclear(res)
            return Result(True, rows)
        f = lambda k: (_pq.PQresultErrorField(res, ord(k)) or b"").decode(errors="replace")
        r = Result(False, state=f("C") or "08006", msg=f("M"), detail=f("D"))
        _pq.PQclear(res)
        if _pq.PQstatus(self.c) != 0:
            r.state = "08006"
        return r


def lit(s):
    return "'" + s.replace("'", "''") + "'"


DIR, SEED = sys.argv[1], int(sys.argv[2])
ROUTER = "host=%s/router dbname=tablestore user=postgres" % DIR
NODES = ["host=%s/shard%d dbname=tablestore" % (DIR, i) for i in range(3)]
NCLIENTS, NPK, NRK = 4, 6, 4

lock = threading.Lock()
anomalies = []
counts = {"operations": 0, "acknowledged": 0, "failed": 0, "ambiguous": 0, "queries": 0,
          "moves": 0, "faults": 0, "table ops done": 0, "table ops refused": 0}


def anomaly(what):
    with lock:
        anomalies.append(what)
    print("ANOMALY:", what, flush=True)


def count(k, n=1):
    with lock:
        counts[k] += n


# ------------------------------------------------------------------ clients
stop = threading.Event()
models = []


def definite(r):
    """a failure that did nothing: a service error, or a node not reached"""
    if r.service_code() in ("ServerBusy",):
        return "unavailable" in r.msg
    return r.service_code() is not None


def client(cid):
    rng = random.Random(SEED * 1000 + cid)
    conn = Conn(ROUTER)
    model = {}          # (pk, rk) -> (V, etag)
    etags = {}          # (pk, rk) -> set of ETags seen acknowledged
    models.append(model)
    seq = 0
    keys = [("c%dk%d" % (cid, j), "r%d" % i) for j in range(NPK) for i in range(NRK)]

    def ent(k, v):
        return json.dumps({"PartitionKey": k[0], "RowKey": k[1], "V": v})

    def resolve(ks, candidates):
        """an ambiguous call: read each key; it must hold one of its candidates"""
        for k in ks:
            for _ in range(200):
                r = conn.run("SELECT tablestore.get_entity('Jep', %s, %s)" % (lit(k[0]), lit(k[1])))
                if r.ok or r.service_code() == "ResourceNotFound":
                    break
                time.sleep(0.05)
            else:
                anomaly("key %s unreadable after an ambiguous call" % (k,))
                continue
            got = None
            if r.ok:
                e = json.loads(r.rows[0][0])
                got = (e["V"], e["odata.etag"])
            okv = [c[k] for c in candidates]
            if got is None and None in okv:
                model.pop(k, None)
            elif got is not None and any(c is not None and c[0] == got[0] for c in okv):
                model[k] = got
                etags.setdefault(k, set()).add(got[1])
            else:
                anomaly("key %s after an ambiguous call holds %s, neither of %s" % (k, got, okv))
                if got is None:
                    model.pop(k, None)
                else:
                    model[k] = got

    def acked_write(k, r):
        e = json.loads(r.rows[0][0])
        et = e["odata.etag"]
        if et in etags.get(k, set()):
            anomaly("key %s: an acknowledged write returned an ETag it had before: %s" % (k, et))
        etags.setdefault(k, set()).add(et)
        model[k] = (e["V"], et)

    while not stop.is_set():
        seq += 1
        v = cid * 1000000 + seq
        k = rng.choice(keys)
        cur = model.get(k)
        op = rng.choice(["insert", "upsert", "merge", "replace", "delete", "batch", "get", "get", "query"])
        count("operations")
        if op == "query":
            if rng.random() < 0.3:
                r = conn.run("SELECT count(*), count(DISTINCT (e->>'PartitionKey') || '/' || (e->>'RowKey')) "
                             "FROM tablestore.query_entities('Jep') e")
                count("queries")
                if r.ok and r.rows[0][0] != r.rows[0][1]:
                    anomaly("a query over every node returned %s entities, %s distinct" % tuple(r.rows[0]))
            continue
        if op == "get":
            r = conn.run("SELECT tablestore.get_entity('Jep', %s, %s)" % (lit(k[0]), lit(k[1])))
            if r.ok:
                e = json.loads(r.rows[0][0])
                if cur is None or (e["V"], e["odata.etag"]) != cur:
                    anomaly("key %s reads %s, the last acknowledged write left %s" % (k, (e["V"], e["odata.etag"]), cur))
            elif r.service_code() == "ResourceNotFound":
                if cur is not None:
                    anomaly("key %s is missing, the last acknowledged write left %s" % (k, cur))
            continue
        if op == "batch":
            pk = k[0]
            rks = rng.sample(["r%d" % i for i in range(NRK)], rng.randint(2, 3))
            ops = [{"op": "insert_or_replace", "entity": {"PartitionKey": pk, "RowKey": rk, "V": v}} for rk in rks]
            r = conn.run("SELECT tablestore.execute_batch('Jep', %s)" % lit(json.dumps(ops)))
            bkeys = [(pk, rk) for rk in rks]
            if r.ok:
                count("acknowledged")
                for (bk, row) in zip(bkeys, r.rows):
                    res = json.loads(row[0])
                    et = res["etag"]
                    if et in etags.get(bk, set()):
                        anomaly("key %s: a batch returned an ETag it had before" % (bk,))
                    etags.setdefault(bk, set()).add(et)
                    model[bk] = (v, et)
            elif definite(r):
                count("failed")
            else:
                count("ambiguous")
                old = {bk: model.get(bk) for bk in bkeys}
                new = {bk: (v, None) for bk in bkeys}
                resolve(bkeys, [old, new])
            continue
        if op == "insert":
            sql = "SELECT tablestore.insert_entity('Jep', %s)" % lit(ent(k, v))
        elif op == "upsert":
            sql = "SELECT tablestore.insert_or_replace_entity('Jep', %s)" % lit(ent(k, v))
        elif cur is None:
            continue
        elif op == "merge":
            sql = "SELECT tablestore.merge_entity('Jep', %s, %s)" % (lit(ent(k, v)), lit(cur[1]))
        elif op == "replace":
            sql = "SELECT tablestore.update_entity('Jep', %s, %s)" % (lit(ent(k, v)), lit(cur[1]))
        else:
            sql = "SELECT tablestore.delete_entity('Jep', %s, %s, %s)" % (lit(k[0]), lit(k[1]), lit(cur[1]))
        r = conn.run(sql)
        if r.ok:
            count("acknowledged")
            if op == "insert" and cur is not None:
                anomaly("key %s: insert acknowledged over %s" % (k, cur))
            if op == "delete":
                model.pop(k, None)
            else:
                acked_write(k, r)
        elif definite(r):
            count("failed")
            code = r.service_code()
            if code == "EntityAlreadyExists" and cur is None:
                anomaly("key %s: EntityAlreadyExists, but the last acknowledged write left none" % (k,))
            if code == "UpdateConditionNotSatisfied":
                anomaly("key %s: its ETag %s was refused, no acknowledged write changed it" % (k, cur[1]))
            if code == "ResourceNotFound" and cur is not None:
                anomaly("key %s: ResourceNotFound, but it holds %s" % (k, cur))
        else:
            count("ambiguous")
            resolve([k], [{k: cur}, {k: None if op == "delete" else (v, None)}])


# ------------------------------------------------------------------ the mover
admin = Conn(ROUTER)


def q1(sql):
    r = admin.run(sql)
    if not r.ok:
        raise RuntimeError("%s: %s" % (sql, r.msg))
    return r.rows[0][0] if r.rows else None


def node_of(p):
    return q1("SELECT node FROM tablestore_router.partitions() WHERE partition = %d" % p)


def call_move(p, target, pause=None):
    env = dict(os.environ)
    if pause:
        env["PGOPTIONS"] = "-c tablestore_router.move_pause_at=%s -c tablestore_router.move_pause_file=%s/hold" % (pause, DIR)
    return subprocess.Popen(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", ROUTER,
                             "-c", "CALL tablestore_router.move_partition(%d, %s)" % (p, lit(target))],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def wait_step(step):
    for _ in range(1200):
        if q1("SELECT step FROM tablestore_router.moves WHERE finished_at IS NULL") == step:
            return
        time.sleep(0.05)
    raise RuntimeError("the move never reached step %s" % step)


def table_ops(i):
    """create_table and delete_table during a move: refused or done"""
    for sql in ("SELECT tablestore.create_table('Tmp%d')" % i, "SELECT tablestore.delete_table('Jep')"):
        r = admin.run(sql)
        if r.ok:
            count("table ops done")
            if "delete_table" in sql:
                anomaly("delete_table('Jep') ran during a move")
        elif r.service_code() == "ServerBusy" and "being moved" in r.msg:
            count("table ops refused")
        else:
            anomaly("%s during a move: %s" % (sql, r.msg))


def complete(p, target):
    for _ in range(5):
        pr = call_move(p, target)
        out = pr.communicate()[0].decode()
        if pr.returncode == 0:
            return
        print("move of %d to be run again: %s" % (p, out.strip().splitlines()[-1] if out.strip() else ""), flush=True)
        time.sleep(1)  # a back-off before the retry, not a wait for a condition
    anomaly("partition %d could not be moved to %s" % (p, target))


def move(p, target, fault=None):
    count("moves")
    hold = os.path.join(DIR, "hold")
    if fault is None:
        open(hold, "w").close()
        pr = call_move(p, target, "copying")
        wait_step("copying")
        table_ops(counts["moves"])
        os.unlink(hold)
        out = pr.communicate()[0].decode()
        if pr.returncode != 0:
            print(out, flush=True)
            complete(p, target)
        return
    count("faults")
    step = "cutover" if fault == "kill-cutover" else "copying"
    open(hold, "w").close()
    pr = call_move(p, target, step)
    wait_step(step)
    if fault in ("kill", "kill-cutover"):
        q1("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query LIKE 'CALL tablestore_router.move_partition%'")
    elif fault == "restart-source":
        src = node_of(p).split()[0].split("=")[1]
        # pg_ctl restart starts it with the options it had (postmaster.opts)
        # (as the postgres OS user: through runuser when run as root)
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run(as_postgres + ["pg_ctl", "-D", src + "/data", "-m", "immediate",
                                      "-w", "restart", "-l", src + "/server.log"],
                       check=True, stdout=subprocess.DEVNULL, cwd="/")
    os.unlink(hold)
    pr.communicate()
    complete(p, target)


def until_acknowledged(n, secs=60):
    """wait until the clients have had n more writes acknowledged (at most
    secs): the first move comes under writes, and writes go on after the
    last"""
    with lock:
        goal = counts["acknowledged"] + n
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        with lock:
            if counts["acknowledged"] >= goal:
                return
        time.sleep(0.05)
    anomaly("the clients had fewer than %d writes acknowledged in %d s" % (n, secs))


def mover():
    rng = random.Random(SEED)
    faults = [None, "kill", None, "restart-source", None, "kill-cutover", None, None]
    until_acknowledged(4 * NCLIENTS)
    for f in faults:
        p = rng.randrange(8)
        here = node_of(p)
        target = rng.choice([n for n in NODES if n != here])
        print("move partition %d to %s%s" % (p, target.split("/")[-1], " (" + f + ")" if f else ""), flush=True)
        move(p, target, f)
    until_acknowledged(4 * NCLIENTS)


threads = [threading.Thread(target=client, args=(c,)) for c in range(NCLIENTS)]
for t in threads:
    t.start()
t0 = time.time()
try:
    mover()
except Exception as e:
    anomaly("the mover: %s" % e)
stop.set()
for t in threads:
    t.join()

# ------------------------------------------------------------------ checks
if q1("SELECT count(*) FROM tablestore_router.moves WHERE finished_at IS NULL") != "0":
    anomaly("a move is unfinished")
final = {}
for m in models:
    final.update(m)
r = admin.run("SELECT e->>'PartitionKey', e->>'RowKey', e->>'V', e->>'odata.etag' FROM tablestore.query_entities('Jep') e")
if not r.ok:
    anomaly("the final query failed: %s" % r.msg)
seen = {}
for pk, rk, v, et in r.rows:
    if (pk, rk) in seen:
        anomaly("the final query returned %s twice" % ((pk, rk),))
    seen[(pk, rk)] = (int(v), et)
for k, want in final.items():
    if seen.get(k) != want:
        anomaly("key %s holds %s, the last acknowledged write left %s" % (k, seen.get(k), want))
for k in seen:
    if k not in final:
        anomaly("key %s is present, deleted or never acknowledged" % (k,))
parts = {}
for i, n in enumerate(NODES):
    for p in admin.run("SELECT partition FROM tablestore_router.partitions() WHERE node = %s" % lit(n)).rows:
        parts[int(p[0])] = i
for i, n in enumerate(NODES):
    c = Conn(n + " user=postgres")
    own = ",".join(str(p) for p, j in parts.items() if j == i) or "-1"
    for rel in c.run("SELECT relation_name FROM tablestore.tables").rows:
        x = c.run("SELECT count(*) FROM tablestore_data.%s WHERE NOT (tablestore.partition_hash(pk) & 7 = ANY ('{%s}'))" % (rel[0], own))
        if x.rows[0][0] != "0":
            anomaly("shard%d holds %s entities of %s outside its partitions" % (i, x.rows[0][0], rel[0]))
    t = c.run("SELECT string_agg(table_name, ',' ORDER BY table_name) FROM tablestore.tables").rows[0][0]
    if i == 0:
        tables0 = t
    elif t != tables0:
        anomaly("shard%d has tables %s, shard0 %s" % (i, t, tables0))
    x = c.run("SELECT (SELECT count(*) FROM pg_publication) + (SELECT count(*) FROM pg_subscription) + (SELECT count(*) FROM pg_replication_slots)")
    if x.rows[0][0] != "0":
        anomaly("shard%d keeps replication objects" % i)

counts["entities"] = len(final)
counts["seconds"] = round(time.time() - t0, 1)
counts["anomalies"] = len(anomalies)
print(", ".join("%s %s" % kv for kv in counts.items()))
for row in admin.run("SELECT partition, split_part(source, '/', 4), split_part(target, '/', 4), attempts, rows_moved, "
                     "round(extract(epoch FROM elapsed)::numeric, 2), cutover_ms FROM tablestore_router.moves ORDER BY id").rows:
    print("move of partition %s: %s -> %s, %s attempt(s), %s entities, %s s, cutover %s ms" % tuple(row))
sys.exit(1 if anomalies else 0)
