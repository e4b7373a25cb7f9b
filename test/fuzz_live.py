#!/usr/bin/python3
"""test/fuzz_live.py: random input for every SQL function of tablestore, on a
live server.

Usage: fuzz_live.py [--router] CONNINFO_PREFIX SECONDS SEED WORKDIR

CONNINFO_PREFIX is libpq connection text without a user (e.g. "host=/tmp/x
dbname=fz"); the database must hold test/fuzz_fixture.sql.  The functions
are read from the catalog (every function that belongs to extension
tablestore), and each statement calls one of them with arguments generated
from each parameter's name and type:
  table names    the fixture's tables, random legal and illegal names, huge
  filters        random OData expressions from the grammar, mutations of
                 them, long and/or chains, deep nesting, huge literals
  select lists   random, empty, odd separators, thousands of names, huge
  entities       random typed properties with right and wrong annotations,
                 wrong shapes (arrays, scalars, nesting), too many or too
                 large properties
  keys           legal, forbidden characters, over-long, continuation keys
                 returned by earlier pages
  ETags          returned by earlier writes, malformed, huge
  batches        random operations, wrong shapes, too many, too large
  NULL           in any argument
Values are SQL expressions (repeat(), jsonb_build_object(), ...), so each
statement stays short enough to show as a reproduction.  Statements run as
ts_fz_user (ordinary rights), ts_fz_norights, ts_fz_owner (owns the tables)
and the superuser; the superuser's statements, and the owner's delete_table,
run in a transaction that is rolled back.

--router: the database is a scale-out router (extension tablestore_router,
test/cluster/fuzz_router.sh) whose fixture was made through its API, with
the fixture's tables only (no odd relations: node internals, as
verify_index and regclass arguments are, which a router has not).  The
functions are those of extension tablestore_router that PUBLIC may execute:
the API (the PL/Proxy calls behind it and configure() are the superuser's
and take a partition as given).  A fifth role, ts_fz_router_only, exists
on the router only, so that the shards refuse its connections.  A
router's calls commit on the shards
whatever the router's transaction does, so a delete_table of a fixture
table runs as a role that may not delete it, never as its owner or the
superuser.

It goes on after a failure (reconnecting after a crash) and at the end
prints how many statements ran, their outcomes, and every distinct finding:
a lost connection (backend crash), an internal error (XX000), an error
message over 8 KiB (user input echoed without a bound) or showing "(null)"
(a NULL pointer printed with %s), or a statement that
ran on long after its statement_timeout (3 s) should have cancelled it.  Exits 1 if there
was any finding.  Every statement is written to WORKDIR/statements.log.
"""
import ctypes
import ctypes.util
import json
import random
import re
import select
import sys
import time

# ---------------------------------------------------------------- libpq

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
_pq.PQsendQuery.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_pq.PQsocket.argtypes = [ctypes.c_void_p]
_pq.PQconsumeInput.argtypes = [ctypes.c_void_p]
_pq.PQisBusy.argtypes = [ctypes.c_void_p]
_pq.PQgetResult.restype = ctypes.c_void_p
_pq.PQgetResult.argtypes = [ctypes.c_void_p]

CONNECTION_OK = 0
# every statement is cancelled after STATEMENT_TIMEOUT seconds; one that
# runs IGNORED_CANCEL seconds has ignored the cancel (a loop without
# CHECK_FOR_INTERRUPTS) and is a finding
STATEMENT_TIMEOUT = 3
IGNORED_CANCEL = 12
PGRES_COMMAND_OK, PGRES_TUPLES_OK = 1, 2


class Conn:
    """One libpq connection; exec() returns (ok, sqlstate, message, rows)."""

    def __init__(self, conninfo):
        self.conninfo = conninfo
        self.c = None

    def connect(self, wait=30.0):
        deadline = time.time() + wait
        while True:
            if self.c:
                _pq.PQfinish(self.c)
            self.c = _pq.PQconnectdb(self.conninfo.encode())
            if _pq.PQstatus(self.c) == CONNECTION_OK:
                self.exec("SET statement_timeout = '%ds'" % STATEMENT_TIMEOUT)
                self.exec("SET client_min_messages = error")
                return True
            if time.time() > deadline:
                raise RuntimeError("cannot connect: %s" % _pq.PQerrorMessage(self.c).decode(errors="replace"))
            time.sleep(0.3)

    def alive(self):
        return self.c is not None and _pq.PQstatus(self.c) == CONNECTION_OK

    def exec(self, sql, limit=None):
        """Run sql; with limit (seconds), give up on a statement that runs
        longer: the connection is abandoned (the caller reconnects) and the
        result is (False, "HUNG", ...)."""
        if limit is None:
            res = _pq.PQexec(self.c, sql.encode("utf-8"))
        else:
            if not _pq.PQsendQuery(self.c, sql.encode("utf-8")):
                return False, "08006", _pq.PQerrorMessage(self.c).decode(errors="replace"), []
            sock = _pq.PQsocket(self.c)
            deadline = time.time() + limit
            while True:
                if not _pq.PQconsumeInput(self.c):
                    break
                if not _pq.PQisBusy(self.c):
                    break
                left = deadline - time.time()
                if left <= 0:
                    _pq.PQfinish(self.c)
                    self.c = None
                    return False, "HUNG", "no answer after %d s" % limit, []
                select.select([sock], [], [], min(left, 1.0))
            res = _pq.PQgetResult(self.c)
            # drain: a single statement gives one result, then NULL
            while True:
                extra = _pq.PQgetResult(self.c)
                if not extra:
                    break
                _pq.PQclear(extra)
        if not res:
            return False, "08006", _pq.PQerrorMessage(self.c).decode(errors="replace"), []
        st = _pq.PQresultStatus(res)
        if st in (PGRES_COMMAND_OK, PGRES_TUPLES_OK):
            rows = []
            for i in range(min(_pq.PQntuples(res), 5)):
                rows.append([None if _pq.PQgetisnull(res, i, j) else
                             _pq.PQgetvalue(res, i, j).decode("utf-8", errors="replace")
                             for j in range(_pq.PQnfields(res))])
            _pq.PQclear(res)
            return True, None, None, rows
        code = _pq.PQresultErrorField(res, ord("C"))
        msg = _pq.PQresultErrorField(res, ord("M")) or b""
        detail = _pq.PQresultErrorField(res, ord("D")) or b""
        hint = _pq.PQresultErrorField(res, ord("H")) or b""
        _pq.PQclear(res)
        if not self.alive():
            return False, "08006", "connection lost: " + msg.decode(errors="replace"), []
        full = msg.decode(errors="replace")
        return False, (code or b"?????").decode(), full, len(msg) + len(detail) + len(hint)


# ---------------------------------------------------------------- values

def lit(s):
    """s as an SQL string literal (standard_conforming_strings)."""
    return "'" + s.replace("'", "''") + "'"


R = random.Random()
BIG = [0, 1, 2, 100, 511, 512, 513, 1000, 32768, 32769, 65536, 100000, 1000000, 10 * 1024 * 1024]


def big_n():
    """a repetition count, mostly small, sometimes huge"""
    r = R.random()
    if r < 0.6:
        return R.choice(BIG[:8])
    if r < 0.93:
        return R.choice(BIG[:12])
    return R.choice(BIG)


CHARS = ("abcxyzABCXYZ0123456789 _-.,;:!'\"/\\#?%&*()[]{}<>=+|~`^$@"
         "\u00e9\u00df\u4e2d\u5b57\u8a9e\uff5a\u00a0\u2028\ufeff\U0001f600\U0001d11e"
         + "".join(chr(c) for c in list(range(1, 32)) + list(range(127, 160))))


def rand_text(maxlen=20):
    return "".join(R.choice(CHARS) for _ in range(R.randint(0, maxlen)))


def rand_ident():
    first = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
    rest = first + "0123456789"
    return R.choice(first) + "".join(R.choice(rest) for _ in range(R.randint(0, 12)))


TABLES = ["Alpha", "Beta", "Gamma", "Secret", "Policed", "alpha", "BETA", "Missing", "tables", "Tables",
          "Alpha", "Beta", "Alpha", "Beta",
          "Oddint", "Oddtext", "Oddpart", "Oddpart_a", "Oddview", "Oddnull", "Oddarray", "Orphan", "Renamed", "Renamed2",
          "Oddcheck", "Oddkid"]
# the fixture's tables (test/fuzz_fixture.sql), in lower case
FIXTURE_TABLES = {"alpha", "beta", "gamma", "secret", "policed", "longkeys"}
ROUTER = False    # --router: the database is a scale-out router


def gen_table_name():
    r = R.random()
    if r < 0.6:
        return lit(R.choice(TABLES)), "pool"
    if r < 0.7:
        n = R.choice([1, 2, 3, 62, 63, 64, 65, 200])
        return lit("T" + "".join(R.choice("abcXYZ019") for _ in range(n - 1))), "len%d" % n
    if r < 0.85:
        return lit(rand_text(30)), "random"
    if r < 0.92:
        return lit(""), "empty"
    n = big_n()
    return "repeat('A', %d)" % n, "repeat%d" % n


KEYS = ["p1", "p2", "00007", "00013", "", "wide", "props252", "longstring", "s", "1", "x"]


def gen_key():
    r = R.random()
    if r < 0.45:
        return lit(R.choice(KEYS)), "pool"
    if r < 0.6:
        return lit(rand_text(12)), "random"
    if r < 0.7:
        return lit(R.choice(["a/b", "a\\b", "#", "?", "\x7f", "\x1f", "\u0085", "\U0001f600", "\ufffe"])), "forbidden-or-odd"
    if r < 0.9:
        n = R.choice([255, 256, 257, 511, 512, 513, 1024])
        ch = R.choice(["k", "\u5b57", "\U0001f600"])
        return "repeat(%s, %d)" % (lit(ch), n), "repeat%d" % n
    n = big_n()
    return "repeat('k', %d)" % n, "repeat%d" % n


PROPS = ["Age", "Name", "IsActive", "Score", "Big", "When", "Id", "Blob", "Special", "PartitionKey", "RowKey",
         "Timestamp", "TableName", "Missing", "P1", "S", "B", "N", "odata.etag", "Age@odata.type", "_x"]
OPS = ["eq", "ne", "gt", "ge", "lt", "le"]
BAD_OPS = ["EQ", "Eq", "==", "=", "like", "has", "add", "in", "", "eqq"]


def f_literal():
    r = R.randrange(16)
    if r == 0:
        return str(R.choice([0, 1, -1, 30, 2147483647, -2147483648, 2147483648, -2147483649, 10 ** 30]))
    if r == 1:
        return str(R.choice([0, 1, 9223372036854775807, -9223372036854775808, 9223372036854775808])) + R.choice(["L", "l", ""])
    if r == 2:
        return R.choice(["1.5", ".5", "5.", "1e3", "1E-3", "1e308", "1e309", "-0.0", "2.0", "1e", "1.2.3", "0x10", "NaN", "INF"])
    if r == 3:
        return lit(rand_text(10))
    if r == 4:
        return "datetime" + lit(R.choice(["2020-01-01T00:00:00Z", "2020-01-01T00:00:00.1234567Z", "2020-01-01T00:00:00.12345678Z",
                                          "1601-01-01T00:00:00Z", "1600-12-31T23:59:59Z", "9999-12-31T23:59:59.9999999Z",
                                          "10000-01-01T00:00:00Z", "2020-02-30T00:00:00Z", "2020-01-01", "2020-01-01T00:00:00+01:00",
                                          "garbage", "", "2020-01-01T24:00:00Z"]))
    if r == 5:
        return "guid" + lit(R.choice(["c4ca4238-a0b9-2382-0dcc-509a6f75849b", "C4CA4238-A0B9-2382-0DCC-509A6F75849B",
                                      "c4ca4238a0b923820dcc509a6f75849b", "zzzz", "", "c4ca4238-a0b9-2382-0dcc-509a6f75849"]))
    if r == 6:
        return R.choice(["X", "binary", "x"]) + lit(R.choice(["0102", "FF", "", "0", "GG", "0102030", "ab" * 50]))
    if r == 7:
        return R.choice(["true", "false", "null", "TRUE", "Null"])
    if r == 8:
        return R.choice(["foo", "time", "datetimeoffset", "int"]) + lit("1")
    if r == 9:
        return lit("O''Brien")
    return str(R.randint(-100, 400))


def f_prop():
    r = R.random()
    if r < 0.8:
        return R.choice(PROPS)
    if r < 0.9:
        return rand_ident()
    return R.choice(["a" * 300, "1abc", "Age.x", "@", "Age/Name", "\u5b57"])


def f_expr(depth):
    r = R.random()
    if depth <= 0 or r < 0.35:
        k = R.random()
        if k < 0.7:
            a, b = f_prop(), f_literal()
            if R.random() < 0.15:
                a, b = b, a
            op = R.choice(OPS) if R.random() < 0.93 else R.choice(BAD_OPS)
            if R.random() < 0.05:
                b = f_prop()          # property against property
            return "%s %s %s" % (a, op, b)
        if k < 0.8:
            return f_prop()
        if k < 0.9:
            return R.choice(["true", "false"])
        return "%s(%s, %s)" % (R.choice(["startswith", "substringof", "endswith", "length", "tolower"]), f_prop(), f_literal())
    if r < 0.5:
        return "not " + f_expr(depth - 1)
    if r < 0.65:
        return "(" + f_expr(depth - 1) + ")"
    return "%s %s %s" % (f_expr(depth - 1), R.choice(["and", "or", "AND", "Or"]), f_expr(depth - 1))


def mutate(s):
    for _ in range(R.randint(1, 5)):
        if not s:
            s = rand_text(5)
        i = R.randrange(len(s) + 1)
        m = R.randrange(5)
        if m == 0:
            s = s[:i] + R.choice(["(", ")", "'", " ", "and", "not", "eq", "L", "''", "\x01", "X'", "datetime'"]) + s[i:]
        elif m == 1:
            s = s[:i] + s[i + R.randint(1, 5):]
        elif m == 2 and len(s) < 5000:
            j = R.randrange(len(s) + 1)
            s = s[:i] + s[min(i, j):max(i, j)] * R.randint(2, 50) + s[i:]
        elif m == 3:
            s = s[:i]
        else:
            s = s[:i] + rand_text(4) + s[i:]
    return s


FILTER_POOL = ["Age gt 10", "PartitionKey eq 'p1'", "PartitionKey eq 'p1' and RowKey eq '00007'",
               "PartitionKey eq 'p1' and (RowKey eq '00007' or RowKey eq '00013')",
               "(PartitionKey eq 'p1' and RowKey eq '00007') or (PartitionKey eq 'p2' and RowKey eq '00008')",
               "PartitionKey ge 'p2' and PartitionKey lt 'p4'", "PartitionKey eq 'p1' and RowKey ge '00100' and RowKey lt '00200'",
               "RowKey gt '00100' and RowKey lt '00050'", "PartitionKey eq 'a' and PartitionKey eq 'b'",
               "TableName ge 'A' and TableName lt 'C'", "Timestamp gt datetime'2000-01-01T00:00:00Z'", "IsActive", "not IsActive"]


def gen_filter():
    r = R.random()
    if r < 0.35:
        return lit(f_expr(R.randint(0, 6))), "grammar"
    if r < 0.5:
        return lit(mutate(f_expr(R.randint(0, 4)))), "mutated"
    if r < 0.6:
        return lit(R.choice(FILTER_POOL)), "pool"
    if r < 0.7:
        n = R.choice([15, 16, 100, 1000, 10000, 100000, 200000, 1000000])
        link = R.choice([" and true", " or true", " and Age eq 1", " or Age eq 1", " and not false",
                         " or PartitionKey eq 'p1'", " and RowKey ge 'a'", " or (PartitionKey eq 'p1' and RowKey eq '1')"])
        return "'true' || repeat(%s, %d)" % (lit(link), n), "chain%d" % n
    if r < 0.8:
        n = R.choice([10, 100, 1000, 10000, 100000, 1000000])
        k = R.randrange(4)
        if k == 0:
            return "repeat('(', %d) || 'Age eq 1' || repeat(')', %d)" % (n, n), "parens%d" % n
        if k == 1:
            return "repeat('not ', %d) || 'true'" % n, "nots%d" % n
        if k == 2:
            return "repeat('(', %d) || 'true'" % n, "unbalanced%d" % n
        return "repeat('(not ', %d) || 'IsActive' || repeat(')', %d)" % (n, n), "notparens%d" % n
    if r < 0.88:
        n = big_n()
        k = R.randrange(6)
        if k == 0:
            return "'Name eq ''' || repeat('x', %d) || ''''" % n, "strlit%d" % n
        if k == 1:
            return "'Age eq ' || repeat('9', %d)" % n, "numlit%d" % n
        if k == 2:
            return "'Blob eq X''' || repeat('ab', %d) || ''''" % n, "binlit%d" % n
        if k == 3:
            return "repeat('A', %d) || ' eq 1'" % n, "propname%d" % n
        if k == 4:
            return "'When eq datetime''2020-01-01T00:00:00.' || repeat('1', %d) || 'Z'''" % n, "fraction%d" % n
        return "'PartitionKey eq ''' || repeat('''''', %d) || ''''" % n, "quotes%d" % n
    if r < 0.94:
        return lit(R.choice(["", " ", "\t", "()", "not", "and", "eq", "'", "''", "X'", "Age eq", "eq 1", "1", "Age"])), "fragment"
    return lit(rand_text(40)), "random"


def gen_select():
    r = R.random()
    if r < 0.4:
        return lit(",".join(R.choice(PROPS) for _ in range(R.randint(1, 6)))), "names"
    if r < 0.6:
        return lit(R.choice(["", ",", " , ", "Age,,Name", " Age ", "*", "Age,*", "a b", "Age;Name", ",Age", "Age,",
                             "PartitionKey,RowKey,Timestamp", "odata.etag", "\u5b57", "Age@odata.type"])), "odd"
    if r < 0.75:
        return lit(",".join(rand_ident() for _ in range(R.randint(1, 20)))), "random-idents"
    if r < 0.85:
        return lit(mutate("Age,Name,IsActive")), "mutated"
    n = R.choice([252, 253, 1000, 20000, 200000, 1000000])
    k = R.randrange(3)
    if k == 0:
        return "repeat('Age,', %d) || 'Age'" % n, "repeat%d" % n
    if k == 1:
        return "(SELECT string_agg('P' || i, ',') FROM generate_series(1, %d) i)" % n, "distinct%d" % n
    return "repeat('A', %d)" % (n * 10), "longname%d" % (n * 10)


EDM = ["Edm.String", "Edm.Int32", "Edm.Int64", "Edm.Double", "Edm.Boolean", "Edm.DateTime", "Edm.Guid", "Edm.Binary",
       "Edm.Nope", "edm.int32", "", "Edm.Int16", "Edm.DateTimeOffset"]


def rand_value():
    r = R.randrange(14)
    if r == 0:
        return R.randint(-2 ** 31, 2 ** 31 - 1)
    if r == 1:
        return R.choice([2 ** 31, -2 ** 31 - 1, 2 ** 63, 10 ** 40, 0, -0])
    if r == 2:
        return R.choice([1.5, -0.0, 1e308, 5e-324, 0.1])
    if r == 3:
        return R.choice([True, False])
    if r == 4:
        return None
    if r == 5:
        return rand_text(20)
    if r == 6:
        return R.choice(["NaN", "Infinity", "-Infinity", "-0", "0x1p3", "1e400", "12", "9223372036854775808", "-9223372036854775809",
                         "2020-01-01T00:00:00Z", "1600-01-01T00:00:00Z", "c4ca4238-a0b9-2382-0dcc-509a6f75849b", "AQID", "AQI", "====",
                         "true", ""])
    if r == 7:
        return [1, 2, R.choice([3, "x", None])]
    if r == 8:
        return {"nested": rand_value() if R.random() < 0.5 else 1}
    return rand_text(8)


def rand_entity_obj(pk=None):
    e = {}
    if R.random() < 0.93:
        e["PartitionKey"] = pk if pk is not None else (R.choice(KEYS) if R.random() < 0.8 else R.choice([1, None, {}, [], rand_text(6)]))
    if R.random() < 0.93:
        e["RowKey"] = R.choice(KEYS + ["new" + str(R.randint(0, 50))]) if R.random() < 0.8 else R.choice([2, None, True, rand_text(6)])
    for _ in range(R.randint(0, 8)):
        name = f_prop() if R.random() < 0.5 else rand_ident()
        if R.random() < 0.05:
            name = R.choice(["", "a" * 256, "a" * 255, "1x", "a b", "x@odata.type", "@odata.type", "odata.etag", "odata.metadata", "Timestamp", "\u5b57"])
        e[name] = rand_value()
        if R.random() < 0.4:
            e[name + "@odata.type"] = R.choice(EDM) if R.random() < 0.9 else R.choice([1, None, {}])
    return e


def gen_entity():
    r = R.random()
    if r < 0.6:
        return lit(json.dumps(rand_entity_obj(), ensure_ascii=False)) + "::jsonb", "random-object"
    if r < 0.7:
        return lit(R.choice(["[]", "{}", "\"x\"", "1", "null", "true", "[{\"PartitionKey\": \"p1\", \"RowKey\": \"1\"}]",
                             "{\"PartitionKey\": {\"a\": 1}, \"RowKey\": \"1\"}"])) + "::jsonb", "wrong-shape"
    if r < 0.78:
        # (no more than 100,000: while the check is quadratic (FINDINGS F12),
        # more would leave abandoned backends burning CPU for minutes)
        n = R.choice([252, 253, 1000, 10000, 100000])
        return ("jsonb_build_object('PartitionKey', 'p1', 'RowKey', 'many') || "
                "(SELECT jsonb_object_agg('P' || i, i) FROM generate_series(1, %d) i)" % n), "props%d" % n
    if r < 0.88:
        n = R.choice([32768, 32769, 65536, 524288, 1048488, 2000000, 10 * 1024 * 1024])
        k = R.randrange(3)
        if k == 0:
            return "jsonb_build_object('PartitionKey', 'p1', 'RowKey', 'big', 'S', repeat('x', %d))" % n, "string%d" % n
        if k == 1:
            return ("jsonb_build_object('PartitionKey', 'p1', 'RowKey', 'big', 'B', "
                    "translate(encode(convert_to(repeat('x', %d), 'UTF8'), 'base64'), E'\\n', ''), 'B@odata.type', 'Edm.Binary')" % n), "binary%d" % n
        return ("(SELECT jsonb_build_object('PartitionKey', 'p1', 'RowKey', 'big') || jsonb_object_agg('S' || i, repeat('y', 32768)) "
                "FROM generate_series(1, %d) i)" % max(1, n // 32768)), "manystrings%d" % n
    if r < 0.94:
        n = R.choice([10, 100, 1000, 5000])
        return ("('{\"PartitionKey\": \"p1\", \"RowKey\": \"deep\", \"D\": ' || repeat('[', %d) || repeat(']', %d) || '}')::jsonb" % (n, n)), "deep%d" % n
    n = R.choice([512, 513, 1000, 100000])
    return "jsonb_build_object('PartitionKey', repeat('k', %d), 'RowKey', repeat('r', %d))" % (n, R.choice([1, n])), "longkeys%d" % n


ETAGS = []        # ETags seen in write results


def gen_etag():
    r = R.random()
    if r < 0.3:
        return lit("*"), "star"
    if r < 0.5 and ETAGS:
        return lit(R.choice(ETAGS)), "seen"
    if r < 0.75:
        base = R.choice(ETAGS) if ETAGS else "W/\"datetime'2020-01-01T00%3A00%3A00Z'\""
        return lit(mutate(base)), "mutated"
    if r < 0.9:
        return lit(R.choice(["", "**", "W/", "W/\"\"", "\"x\"", "W/\"datetime'garbage'\"", "W/\"datetime'1600-01-01T00%3A00%3A00Z'\"",
                             "W/\"datetime'9999-12-31T23%3A59%3A59.9999999Z'\"", "W/\"datetime'2020-01-01T00:00:00Z'\"", "*,*"])), "odd"
    n = big_n()
    return "'W/\"datetime''' || repeat('9', %d) || '''\"'" % n, "repeat%d" % n


CONTINUATIONS = []   # (next_partition_key, next_row_key) seen in page results


def gen_batch():
    r = R.random()
    if r < 0.55:
        pk = R.choice(KEYS)
        ops = []
        for _ in range(R.randint(0, 8) if R.random() < 0.9 else R.choice([99, 100, 101])):
            op = {"op": R.choice(["insert", "update", "merge", "insert_or_replace", "insert_or_merge", "delete", "retrieve"])
                  if R.random() < 0.9 else R.choice(["nope", "", 1, None, "INSERT"])}
            if R.random() < 0.95:
                op["entity"] = rand_entity_obj(pk if R.random() < 0.9 else None)
            if R.random() < 0.3:
                op["if_match"] = R.choice(["*", "", 5, None] + ETAGS[-3:])
            ops.append(op)
        return lit(json.dumps(ops, ensure_ascii=False)) + "::jsonb", "random-ops"
    if r < 0.7:
        return lit(R.choice(["[]", "{}", "[1]", "[[]]", "null", "\"x\"", "[{}]", "[{\"op\": \"insert\"}]",
                             "[{\"op\": \"insert\", \"entity\": []}]", "[{\"op\": \"delete\", \"entity\": {\"PartitionKey\": \"p1\"}}]"])) + "::jsonb", "wrong-shape"
    if r < 0.85:
        n = R.choice([100, 101, 1000, 100000])
        return ("(SELECT jsonb_agg(jsonb_build_object('op', 'insert_or_merge', 'entity', "
                "jsonb_build_object('PartitionKey', 'bp', 'RowKey', 'r' || i))) FROM generate_series(1, %d) i)" % n), "ops%d" % n
    n = R.choice([4, 5, 40])
    return ("(SELECT jsonb_agg(jsonb_build_object('op', 'insert', 'entity', "
            "jsonb_build_object('PartitionKey', 'bp', 'RowKey', 'r' || i, 'S', repeat('z', 32000)))) FROM generate_series(1, %d) i)" % n), "bytes%d" % n


def gen_int():
    v = R.choice(["0", "-1", "1", "2", "5", "999", "1000", "1001", "2147483647", "-2147483648", "100"])
    return v, "int" + v


REGCLASSES = []


def gen_regclass():
    r = R.random()
    if r < 0.8 and REGCLASSES:
        return lit(R.choice(REGCLASSES)) + "::regclass", "relation"
    return R.choice(["0::oid::regclass", "12345::oid::regclass", "'pg_class'::regclass", "'pg_class_oid_index'::regclass"]), "other"


def gen_arg(name, typ, fname):
    """(SQL expression, tag) for one argument"""
    if R.random() < 0.07:
        return "NULL::" + typ, "NULL"
    n = (name or "").lower()
    if typ == "text":
        if n == "table_name":
            return gen_table_name()
        if n == "filter":
            return gen_filter()
        if n == "select_list":
            return gen_select()
        if n == "if_match":
            return gen_etag()
        if n in ("partition_key", "row_key", "next_partition_key", "next_row_key"):
            return gen_key()
        return lit(rand_text(20)), "text"
    if typ == "jsonb":
        if n == "operations":
            return gen_batch()
        return gen_entity()
    if typ == "integer":
        return gen_int()
    if typ == "regclass":
        return gen_regclass()
    if typ == "tablestore.key":
        e, tag = gen_key()
        return "(%s)::tablestore.key" % e, tag
    if typ == "cstring":
        e, tag = gen_key()
        return "(%s)::cstring" % e, tag
    return "NULL::" + typ, "NULL"


# ---------------------------------------------------------------- run

def main():
    global ROUTER
    argv = sys.argv[1:]
    if argv[:1] == ["--router"]:
        ROUTER = True
        argv = argv[1:]
        # the odd relations are made on a node, not through a router
        TABLES[:] = [t for t in TABLES if t.lower() in FIXTURE_TABLES or t in ("Missing", "tables", "Tables")]
    if len(argv) != 4:
        print(__doc__)
        return 2
    base, seconds, seed, workdir = argv[0], float(argv[1]), int(argv[2]), argv[3]
    extension = "tablestore_router" if ROUTER else "tablestore"
    R.seed(seed)
    roles = [("ts_fz_user", 6), ("ts_fz_norights", 1), ("ts_fz_owner", 2), ("postgres", 1)]
    if ROUTER:
        # a role of the router that no shard has: every call it makes on a
        # shard is refused at the connection (the router's connection_error)
        roles.append(("ts_fz_router_only", 1))
    conns = {r: Conn("%s user=%s" % (base, r)) for r, _ in roles}
    for c in conns.values():
        c.connect()
    admin = conns["postgres"]
    # exec() keeps at most 5 rows: read the list in one row instead
    ok, _, _, rows = admin.exec(
        "SELECT string_agg(concat_ws(E'\\t', p.oid::regprocedure::text, n.nspname || '.' || p.proname, p.proretset::text, "
        "coalesce(array_to_string(p.proargnames, ',', ''), ''), "
        "coalesce((SELECT string_agg(format_type(t, NULL), ',' ORDER BY o) FROM unnest(p.proargtypes) WITH ORDINALITY u(t, o)), '')), E'\\n' ORDER BY 1) "
        "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e' "
        "JOIN pg_extension x ON x.oid = d.refobjid AND d.refclassid = 'pg_extension'::regclass "
        "WHERE x.extname = '%s'%s" % (extension, " AND has_function_privilege('public', p.oid, 'EXECUTE')" if ROUTER else ""))
    funcs = []
    for line in rows[0][0].split("\n"):
        sig, qname, retset, argnames, argtypes = line.split("\t")
        types = argtypes.split(",") if argtypes else []
        names = argnames.split(",") if argnames else [""] * len(types)
        if "internal" in types:
            continue        # SQL cannot pass a value of type internal, not even NULL
        funcs.append((sig, qname, retset == "true", list(zip(names + [""] * (len(types) - len(names)), types))))
    if not ROUTER:
        ok, _, _, rows = admin.exec(
            "SELECT string_agg(indexrelid::regclass::text, ' ') FROM pg_index WHERE indrelid IN "
            "(SELECT oid FROM pg_class WHERE relnamespace = 'tablestore_data'::regnamespace)")
        REGCLASSES.extend((rows[0][0] or "").split())
        REGCLASSES.extend(["tablestore_data.alpha", "tablestore.tables", "tablestore.tables_pkey"])
    # the key type's comparison and I/O functions are simple: a third of the weight
    weights = [1 if re.search(r"\.key_", f[1]) else 3 for f in funcs]
    print("fuzz_live: seed %d, %.0f s, %d functions of extension %s" % (seed, seconds, len(funcs), extension))

    log = open(workdir + "/statements.log", "w", encoding="utf-8")
    counts, states, findings, slow = {}, {}, {}, {}
    # Fixed probes, run before the random statements, as ts_fz_user, rolled
    # back.  An entity of 150,000
    # properties must be refused (TooManyProperties) or cancelled by
    # statement_timeout promptly: a random run meets such an entity only now
    # and then, and how long a slow check takes depends on the machine, so
    # this case, which once ran for a minute ignoring every cancel
    # (FINDINGS F12), is tried on every run.
    probes = [("tablestore.insert_entity",
               "SELECT length(tablestore.insert_entity('Alpha', jsonb_build_object('PartitionKey', 'p1', 'RowKey', 'many') || "
               "(SELECT jsonb_object_agg('P' || i, i) FROM generate_series(1, 150000) i))::text)",
               ["probe=props150000"]),
              # 900 entities whose keys are both at the 512-unit limit and
              # differ at both ends, in an order that is not the key order:
              # every legal pair must fit the key index (FINDINGS F13)
              ("tablestore.insert_entity",
               "SELECT count(tablestore.insert_entity('Longkeys', jsonb_build_object("
               "'PartitionKey', lpad(i::text, 6, '0') || repeat('\u5b57', 506), "
               "'RowKey', repeat('\u8a9e', 506) || lpad(j::text, 6, '0')))) "
               "FROM (SELECT i, j FROM generate_series(1, 30) i, generate_series(1, 30) j ORDER BY md5(i || ',' || j)) s",
               ["probe=longest-keys-900"])]
    n = 0
    deadline = time.time() + seconds
    while time.time() < deadline:
        sig, qname, retset, params = R.choices(funcs, weights)[0]
        args, tags = [], []
        cont = R.choice(CONTINUATIONS) if CONTINUATIONS and qname.endswith("query_entities_page") and R.random() < 0.4 else None
        for pname, ptype in params:
            if cont and pname in ("next_partition_key", "next_row_key"):
                # a continuation an earlier page returned, sometimes one half
                # of it with the other half of another
                v = cont[0] if pname == "next_partition_key" else (cont[1] if R.random() < 0.8 else R.choice(CONTINUATIONS)[1])
                e, t = lit(v), "continuation"
            else:
                e, t = gen_arg(pname, ptype, qname)
            args.append(e)
            tags.append("%s=%s" % (pname or ptype, t))
        call = "%s(%s)" % (qname, ", ".join(args))
        if qname.endswith("query_entities_page"):
            sql = "SELECT next_partition_key, next_row_key, length(entities::text) FROM %s" % call
        elif retset:
            sql = "SELECT count(*), sum(length(x::text)) FROM %s x" % call
        else:
            sql = "SELECT length(%s::text)" % call if not qname.endswith(("create_table", "delete_table", "delete_entity", "verify_index")) \
                else "SELECT %s" % call
            if R.random() < 0.3 and qname.endswith(("_entity", "execute_batch")) and not qname.endswith("delete_entity"):
                sql = "SELECT %s::text" % call        # keep the result: ETags for later
        role = R.choices([r for r, _ in roles], [w for _, w in roles])[0]
        if ROUTER and qname.endswith("delete_table") and role in ("ts_fz_owner", "postgres") \
                and args and args[0] in [lit(t) for t in TABLES if t.lower() in FIXTURE_TABLES]:
            # the shards would commit it: a role that may not delete the table
            role = "ts_fz_user"
        rollback = role == "postgres" or (role == "ts_fz_owner" and qname.endswith("delete_table")) or R.random() < 0.2
        if probes:
            # the fixed probes first, whatever the seed
            qname, sql, tags = probes.pop(0)
            role, rollback = "ts_fz_user", True
        conn = conns[role]
        n += 1
        log.write("-- %d %s %s\n%s;\n" % (n, role, " ".join(tags), sql if len(sql) < 20000 else sql[:20000] + " ...[clipped]"))
        log.flush()
        if rollback:
            conn.exec("BEGIN")
        t0 = time.time()
        ok, state, msg, rows = conn.exec(sql, limit=IGNORED_CANCEL)
        took = time.time() - t0
        if rollback and conn.alive():
            conn.exec("ROLLBACK")
        counts[qname] = counts.get(qname, 0) + 1
        key = "ok" if ok else state
        states[key] = states.get(key, 0) + 1
        if ok and rows:
            for row in rows:
                for v in row:
                    if v:
                        ETAGS.extend(json.loads('"%s"' % t) for t in re.findall(r'"odata\.etag": "((?:[^"\\]|\\.)*)"', v)[:2])
            if qname.endswith("query_entities_page") and rows[0][0] is not None and rows[0][1] is not None:
                CONTINUATIONS.append((rows[0][0], rows[0][1]))
            del ETAGS[:-50]
            del CONTINUATIONS[:-50]
        if state == "57014":
            shape = re.sub(r"\d+", "N", qname + " " + " ".join(tags))
            if shape not in slow:
                slow[shape] = sql
        kind = None
        if state == "HUNG":
            kind = "statement still running after %d s, ignoring statement_timeout (%d s)" % (IGNORED_CANCEL, STATEMENT_TIMEOUT)
        elif not ok and (state == "08006" or not conn.alive()):
            kind = "crash (connection lost)"
        elif not ok and state == "XX000":
            kind = "internal error XX000"
        elif not ok and "(null)" in (msg or ""):
            kind = "error message shows \"(null)\" (a NULL pointer given to %s)"
        elif not ok and isinstance(rows, int) and rows > 8192:
            kind = "error message of %d bytes (input echoed without bound)" % rows
        if kind:
            shape = re.sub(r"\d+", "N", " ".join(tags))
            sigkey = (re.sub(r"\d+", "N", kind.split(" of ")[0]), qname, re.sub(r'"[^"]*"|\d+', "_", (msg or "")[:80]))
            if sigkey not in findings:
                findings[sigkey] = (kind, role, sql, msg, 0, shape)
                print("FINDING %d: %s, %s as %s: %s\n  %s" % (len(findings), kind, qname, role, (msg or "")[:200],
                                                           sql if len(sql) < 1500 else sql[:1500] + " ...[clipped]"))
                sys.stdout.flush()
            f = findings[sigkey]
            findings[sigkey] = (f[0], f[1], f[2], f[3], f[4] + 1, f[5])
            if not conn.alive():
                # a grace period, not a condition: a backend that died takes
                # the others down once the postmaster has noticed, which no
                # client can see coming; connect() then polls until the
                # server accepts connections again
                time.sleep(0.5)
                for c in conns.values():
                    c.connect(wait=60.0)
        # a statement that left its transaction open (it should not)
        if conn.alive():
            conn.exec("ROLLBACK")
    log.close()
    print("fuzz_live: %d statements" % n)
    print("  per function: " + ", ".join("%s %d" % (k.split(".")[1], v) for k, v in sorted(counts.items())))
    print("  outcomes: " + ", ".join("%s %d" % (k, v) for k, v in sorted(states.items(), key=lambda kv: -kv[1])))
    if slow:
        print("fuzz_live: %d kinds of statement cancelled by statement_timeout (%d s; not counted as findings):"
              % (len(slow), STATEMENT_TIMEOUT))
        for sql in slow.values():
            print("     " + (sql if len(sql) < 300 else sql[:300] + " ...[clipped]"))
    if findings:
        print("fuzz_live: %d distinct findings:" % len(findings))
        for i, (kind, role, sql, msg, times, shape) in enumerate(findings.values(), 1):
            print("  %d. %s (%d times), as %s: %s\n     %s" % (i, kind, times, role, (msg or "")[:200],
                                                           sql if len(sql) < 600 else sql[:600] + " ...[clipped]"))
        return 1
    print("fuzz_live: no crash, no XX000, no unbounded error message")
    return 0


if __name__ == "__main__":
    sys.exit(main())
