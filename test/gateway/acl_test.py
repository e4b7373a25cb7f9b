#!/usr/bin/python3
"""test/gateway/acl_test.py: Get/Set Table ACL and SAS tokens with si
(issue 22 item 8), in raw HTTP signed by hand, against the gateway of
test/t/010_gateway.pl (GW_PORT, GW_DEV_KEY; account devstoreaccount1).

Set and get round-trip, the five-policy limit and what the service
refuses (400 InvalidXmlDocument), a SAS cannot read or set ACLs (403), a
SAS naming a policy works and stops working on the next request once the
policy is removed or changed, fields both in the SAS and the policy or in
neither are 403, an unknown policy or table gets the answer a wrong
signature gets, and delete_table removes the policies.  The attack on
ACLs (its F3, F4): GET's XML is well-formed and PUTs back unchanged, Ids
with control characters or over 64 UTF-16 units are refused, policy times
and SAS st/se take the same documented UTC forms (no leap second, pre-1970
starts work), sp with letters not the service's is refused, and comp=acl
is answered on /<table> only.
"""
import datetime
import re
import urllib.parse

import gwlib
from gwlib import ACCT

check = gwlib.Checks("acl_test.py")


def request(method, path, body=b"", query="", signed=True, headers=None):
    """an HTTP request on path (after the account); (status, headers, body)"""
    h = {"Content-Type": "application/xml"} if body else {}
    h.update(headers or {})
    return gwlib.request(method, path, body or None, h, query, signed)


def code(hdrs):
    return hdrs.get("x-ms-error-code", "")


def table_sas(table, sp=None, st=None, se=None, si=None, tn=True):
    """a table SAS query string, signed as the SDKs sign it (tn=False: without
    tn, as Azurite's tests write one)"""
    fields = [sp or "", st or "", se or "", f"/table/{ACCT}/{table.lower()}", si or "", "", "",
              "2019-02-02", "", "", "", ""]
    sig = gwlib.sign("\n".join(fields))
    q = {"sv": "2019-02-02", "tn": table} if tn else {"sv": "2019-02-02"}
    for k, v in (("sp", sp), ("st", st), ("se", se), ("si", si)):
        if v is not None:
            q[k] = v
    q["sig"] = sig
    return urllib.parse.urlencode(q)


def acl_xml(*policies):
    out = '<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers>'
    for p in policies:
        out += f"<SignedIdentifier><Id>{p['Id']}</Id>"
        if any(k in p for k in ("Start", "Expiry", "Permission")):
            out += "<AccessPolicy>"
            for k in ("Start", "Expiry", "Permission"):
                if k in p:
                    out += f"<{k}>{p[k]}</{k}>"
            out += "</AccessPolicy>"
        out += "</SignedIdentifier>"
    return (out + "</SignedIdentifiers>").encode()


def ids(xml):
    return re.findall(r"<Id>([^<]*)</Id>", xml)


def iso(delta_hours):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=delta_hours)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


T = "AclHttp"
request("DELETE", f"Tables('{T}')")
s, h, b = request("POST", "Tables", body=('{"TableName": "%s"}' % T).encode(),
                  headers={"Content-Type": "application/json"})
check("create table", s == 201, s)
s, h, b = request("POST", T, body=b'{"PartitionKey": "p", "RowKey": "r", "v": 1}',
                  headers={"Content-Type": "application/json"})
check("insert", s == 201, s)

# a new table has no policies: an empty list
s, h, b = request("GET", T, query="comp=acl")
check("get empty", s == 200 and "application/xml" in h.get("content-type", "") and ids(b) == [], (s, b))

# set and get round-trip (dates in the service's form)
body = acl_xml({"Id": "reader", "Start": "2024-01-01T00:00:00Z", "Expiry": "2099-01-01T00:00:00.5Z", "Permission": "r"},
               {"Id": "writer", "Permission": "au"},
               {"Id": "bare"},
               {"Id": "a&amp;b &lt;c&gt;", "Expiry": "2099-12-31"})
s, h, b = request("PUT", T, body=body, query="comp=acl")
check("set", s == 204, (s, b))
s, h, b = request("GET", T, query="comp=acl")
check("get round-trip ids", ids(b) == ["reader", "writer", "bare", "a&amp;b &lt;c&gt;"], b)
check("get round-trip fields",
      "<Start>2024-01-01T00:00:00Z</Start><Expiry>2099-01-01T00:00:00.5Z</Expiry><Permission>r</Permission>" in b
      and "<Expiry>2099-12-31T00:00:00Z</Expiry>" in b, b)

# five is the limit; a sixth is 400 InvalidXmlDocument and changes nothing
five = acl_xml(*({"Id": f"p{i}", "Permission": "r"} for i in range(5)))
s, h, b = request("PUT", T, body=five, query="comp=acl")
check("set five", s == 204, (s, b))
six = acl_xml(*({"Id": f"q{i}"} for i in range(6)))
s, h, b = request("PUT", T, body=six, query="comp=acl")
check("six refused", s == 400 and code(h) == "InvalidXmlDocument", (s, h, b))
s, h, b = request("GET", T, query="comp=acl")
check("six changed nothing", ids(b) == [f"p{i}" for i in range(5)], b)

# what the service refuses in a policy, and XML that is not the document
for name, doc in [
        ("bad permission letter", acl_xml({"Id": "x", "Permission": "rw"})),
        ("permission letter twice", acl_xml({"Id": "x", "Permission": "rr"})),
        ("Id of 65 characters", acl_xml({"Id": "i" * 65})),
        ("bad date", acl_xml({"Id": "x", "Expiry": "next week"})),
        ("no such day", acl_xml({"Id": "x", "Start": "2024-02-30T00:00:00Z"})),
        ("no Id", b"<SignedIdentifiers><SignedIdentifier><AccessPolicy/></SignedIdentifier></SignedIdentifiers>"),
        ("Id twice", acl_xml({"Id": "x"}, {"Id": "x"})),
        ("unknown element", b"<SignedIdentifiers><SignedIdentifier><Id>x</Id><Foo/></SignedIdentifier></SignedIdentifiers>"),
        ("unknown policy field", b"<SignedIdentifiers><SignedIdentifier><Id>x</Id><AccessPolicy><Perm>r</Perm></AccessPolicy></SignedIdentifier></SignedIdentifiers>"),
        ("wrong root", b"<SignedIdentifier><Id>x</Id></SignedIdentifier>"),
        ("not closed", b"<SignedIdentifiers><SignedIdentifier><Id>x</Id>"),
        ("mismatched tags", b"<SignedIdentifiers><SignedIdentifier><Id>x</Ident></SignedIdentifier></SignedIdentifiers>"),
        ("DOCTYPE", b'<!DOCTYPE x [<!ENTITY e "x">]><SignedIdentifiers/>'),
        ("comment", b"<SignedIdentifiers><!-- c --></SignedIdentifiers>"),
        ("unknown entity", b"<SignedIdentifiers><SignedIdentifier><Id>&e;</Id></SignedIdentifier></SignedIdentifiers>"),
        ("text after root", b"<SignedIdentifiers/>junk"),
        ("mixed content", b"<SignedIdentifiers>t<SignedIdentifier><Id>x</Id></SignedIdentifier></SignedIdentifiers>"),
        ("deep nesting", b"<SignedIdentifiers>" + b"<a>" * 50 + b"</a>" * 50 + b"</SignedIdentifiers>"),
        ("many elements", b"<SignedIdentifiers>" + b"<SignedIdentifier><Id>x</Id></SignedIdentifier>" * 100 + b"</SignedIdentifiers>"),
        ("JSON", b'[{"Id": "x"}]')]:
    s, h, b = request("PUT", T, body=doc, query="comp=acl")
    check(f"refused: {name}", s == 400 and code(h) == "InvalidXmlDocument", (s, code(h), b[:200]))
s, h, b = request("GET", T, query="comp=acl")
check("refusals changed nothing", ids(b) == [f"p{i}" for i in range(5)], b)

# an Id of 64 characters, namespaces and whitespace as SDKs may send them
doc = ('<?xml version="1.0" encoding="utf-8"?>\n<SignedIdentifiers xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
       '  <SignedIdentifier>\n    <Id>' + "é" * 64 + '</Id>\n    <AccessPolicy><Permission>raud</Permission></AccessPolicy>\n'
       '  </SignedIdentifier>\n</SignedIdentifiers>\n').encode()
s, h, b = request("PUT", T, body=doc, query="comp=acl")
check("Id of 64 characters, indented", s == 204, (s, b))

# the table must exist
s, h, b = request("GET", "NoSuchAclTable", query="comp=acl")
check("get on a missing table", s == 404 and code(h) == "TableNotFound", (s, h))
s, h, b = request("PUT", "NoSuchAclTable", body=acl_xml({"Id": "x"}), query="comp=acl")
check("set on a missing table", s == 404 and code(h) == "TableNotFound", (s, h))
s, h, b = request("GET", T, query="comp=list")
check("other comp", s == 400, (s, b))
s, h, b = request("DELETE", T, query="comp=acl")
check("DELETE comp=acl", s == 405, (s, b))

# policies used by SAS tokens
s, h, b = request("PUT", T, query="comp=acl", body=acl_xml(
    {"Id": "read", "Start": iso(-1), "Expiry": iso(1), "Permission": "r"},
    {"Id": "perm-only", "Permission": "r"},
    {"Id": "window-only", "Expiry": iso(1)},
    {"Id": "expired", "Expiry": iso(-1), "Permission": "r"},
    {"Id": "future", "Start": iso(1), "Expiry": iso(2), "Permission": "r"}))
check("set SAS policies", s == 204, (s, b))

ent = f"{T}(PartitionKey='p',RowKey='r')"
q = table_sas(T, si="read")
s, h, b = request("GET", ent, query=q, signed=False)
check("SAS with si reads", s == 200 and '"v":1' in b.replace(" ", ""), (s, b))
s, h, b = request("DELETE", ent, query=q, signed=False, headers={"If-Match": "*"})
check("SAS with si: the policy's permissions only", s == 403 and code(h) == "AuthorizationPermissionMismatch", (s, h))
# the SAS gives what the policy lacks, and only that
s, h, b = request("GET", ent, query=table_sas(T, si="perm-only", se=iso(1)), signed=False)
check("expiry from the SAS, permission from the policy", s == 200, (s, b))
s, h, b = request("GET", ent, query=table_sas(T, si="window-only", sp="r"), signed=False)
check("permission from the SAS, expiry from the policy", s == 200, (s, b))
for name, qs in [("sp in both", table_sas(T, si="read", sp="r")),
                 ("se in both", table_sas(T, si="read", se=iso(1))),
                 ("st in both", table_sas(T, si="read", st=iso(-1))),
                 ("no expiry in either", table_sas(T, si="perm-only")),
                 ("no permission in either", table_sas(T, si="window-only")),
                 ("policy expired", table_sas(T, si="expired")),
                 ("policy not yet valid", table_sas(T, si="future"))]:
    s, h, b = request("GET", ent, query=qs, signed=False)
    check(f"SAS refused: {name}", s == 403 and code(h) == "AuthenticationFailed", (s, code(h)))

# an unknown policy, an unknown table, a wrong signature: one answer
answers = set()
for qs in [table_sas(T, si="nosuch"), table_sas("NoSuchAclTable", si="read"),
           table_sas(T, si="read").replace("sig=", "sig=A")]:
    tbl = "NoSuchAclTable" if "NoSuchAclTable" in qs else T
    s, h, b = request("GET", f"{tbl}()", query=qs, signed=False)
    answers.add((s, code(h)))
check("unknown policy, unknown table, wrong signature answer alike", answers == {(403, "AuthenticationFailed")}, answers)
# a SAS cannot read or set ACLs, before its body is read
s, h, b = request("GET", T, query="comp=acl&" + table_sas(T, si="read"), signed=False)
check("SAS reads ACL", s == 403 and code(h) == "AuthorizationPermissionMismatch", (s, h))
s, h, b = request("PUT", T, query="comp=acl&" + table_sas(T, sp="raud", se=iso(1)), signed=False, body=acl_xml({"Id": "x"}))
check("SAS sets ACL", s == 403 and code(h) == "AuthorizationPermissionMismatch", (s, h))
s, h, b = request("GET", T, query="comp=acl")
check("SAS set nothing", "<Id>x</Id>" not in b and "<Id>read</Id>" in b, b)

# revocation: change the policy, then remove all; the next request sees it
s, h, b = request("PUT", T, query="comp=acl", body=acl_xml({"Id": "read", "Expiry": iso(1), "Permission": "a"}))
check("change policy", s == 204, s)
s, h, b = request("GET", ent, query=q, signed=False)
check("changed policy applies at once", s == 403 and code(h) == "AuthorizationPermissionMismatch", (s, h))
s, h, b = request("PUT", T, query="comp=acl", body=acl_xml({"Id": "read", "Expiry": iso(1), "Permission": "r"}))
s, h, b = request("GET", ent, query=q, signed=False)
check("restored policy reads", s == 200, (s, b))
s, h, b = request("PUT", T, query="comp=acl", body=b"")
check("empty body removes all", s == 204, (s, b))
s, h, b = request("GET", T, query="comp=acl")
check("none left", ids(b) == [], b)
s, h, b = request("GET", ent, query=q, signed=False)
check("revoked SAS refused", s == 403 and code(h) == "AuthenticationFailed", (s, h))

# an account SAS cannot name a policy
s, h, b = request("GET", "Tables", query="sv=2019-02-02&ss=t&srt=sco&sp=rl&se=2099-01-01T00:00:00Z&si=read&sig=AAAA", signed=False)
check("account SAS with si", s == 403 and code(h) == "AuthenticationFailed", (s, h))

# attack-acl F3: GET's XML is well-formed and round-trips; an Id with a
# character XML 1.0 does not carry or a control character is refused
import xml.etree.ElementTree as ET
odd = "a&amp;b&lt;c&gt;d\"e'f \u00e9\U0001F600"
s, h, b = request("PUT", T, query="comp=acl", body=acl_xml({"Id": odd, "Permission": "r"}))
check("Id with markup characters set", s == 204, (s, b))
s, h, b = request("GET", T, query="comp=acl")
try:
    got = [e.text for e in ET.fromstring(b.encode()).iter("Id")]
except ET.ParseError as e:
    got = e
check("GET's XML parses and gives the Id back", got == ["a&b<c>d\"e'f \u00e9\U0001F600"], (got, b))
s, h, b2 = request("PUT", T, query="comp=acl", body=b.encode())
s2, h, b3 = request("GET", T, query="comp=acl")
check("GET's XML PUT back gives the same list", s == 204 and b3 == b, (s, b2, b3))
for name, idxml in [("CR reference", "a&#xD;b"), ("LF reference", "a&#xA;b"), ("raw CR LF", "a\r\nb"),
                    ("tab", "a\tb"), ("C1 control", "a\u0085b"), ("U+FFFE reference", "a&#xFFFE;")]:
    s, h, b = request("PUT", T, query="comp=acl", body=acl_xml({"Id": idxml}))
    check(f"Id refused: {name}", s == 400 and code(h) == "InvalidXmlDocument", (s, code(h), b))

# attack-acl F4: Ids counted in UTF-16 units; the documented UTC forms only,
# no leap second, in policies and in a SAS alike; a policy Start before
# 1970 works; sp with letters other than the service's is refused
s, h, b = request("PUT", T, query="comp=acl", body=acl_xml({"Id": "\U0001F600" * 33}))
check("Id of 66 UTF-16 units refused", s == 400 and code(h) == "InvalidXmlDocument", (s, code(h)))
s, h, b = request("PUT", T, query="comp=acl", body=acl_xml({"Id": "\U0001F600" * 32}))
check("Id of 64 UTF-16 units taken", s == 204, (s, b))
for name, t in [("leap second", "2016-12-31T23:59:60Z"), ("no Z", "2030-01-01T00:00:00"),
                ("lower-case t", "2030-01-01t00:00Z"), ("offset", "2030-01-01T00:00+01:00")]:
    s, h, b = request("PUT", T, query="comp=acl", body=acl_xml({"Id": "t", "Expiry": t}))
    check(f"policy time refused: {name}", s == 400 and code(h) == "InvalidXmlDocument", (s, code(h)))
    s, h, b = request("GET", ent, query=table_sas(T, sp="r", se=t), signed=False)
    check(f"SAS se refused: {name}", s == 403 and code(h) == "AuthenticationFailed", (s, code(h)))
s, h, b = request("GET", ent, query=table_sas(T, sp="r", st="2016-12-31T23:59:60Z", se=iso(1)), signed=False)
check("SAS st refused: leap second", s == 403 and code(h) == "AuthenticationFailed", (s, code(h)))
s, h, b = request("PUT", T, query="comp=acl", body=acl_xml(
    {"Id": "old", "Start": "1900-01-01", "Expiry": iso(1), "Permission": "r"},
    {"Id": "bad-sp", "Expiry": iso(1)}))
check("policy Start before 1970 set", s == 204, (s, b))
s, h, b = request("GET", ent, query=table_sas(T, si="old"), signed=False)
check("SAS with a policy Start before 1970 reads", s == 200, (s, b))
s, h, b = request("GET", ent, query=table_sas(T, sp="r", st="1900-01-01T00:00:00.5Z", se=iso(1)), signed=False)
check("SAS st before 1970 with a fraction reads", s == 200, (s, b))
# a table SAS without tn is a SAS for the table its URL addresses (its
# signature names that table): it reads there, and nowhere else
s, h, b = request("GET", ent, query=table_sas(T, sp="r", se=iso(1), tn=False), signed=False)
check("SAS without tn reads the table it was signed for", s == 200, (s, b))
s, h, b = request("GET", "Other" + T + "()", query=table_sas(T, sp="r", se=iso(1), tn=False), signed=False)
check("SAS without tn refused on another table", s == 403, (s, code(h)))
s, h, b = request("GET", "Tables", query=table_sas(T, sp="r", se=iso(1), tn=False), signed=False)
check("SAS without tn refused on the table list", s == 403, (s, code(h)))
# a start of "now" with milliseconds, as the SDKs write it, is valid at once
# (Azurite's SAS tests: a start rounded up to the next second refused it)
now_ms = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:23] + "Z"
s, h, b = request("GET", ent, query=table_sas(T, sp="r", st=now_ms, se=iso(1)), signed=False)
check("SAS st of now with milliseconds reads at once", s == 200, (s, b))
# and one a few seconds ahead is not yet valid
soon = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:23] + "Z"
s, h, b = request("GET", ent, query=table_sas(T, sp="r", st=soon, se=iso(1)), signed=False)
check("SAS st 30 s ahead refused", s == 403 and code(h) == "AuthenticationFailed", (s, code(h)))
for sp in ("xyzr", "rr", "R"):
    s, h, b = request("GET", ent, query=table_sas(T, sp=sp, se=iso(1)), signed=False)
    check(f"SAS sp={sp} refused", s == 403 and code(h) == "AuthenticationFailed", (s, code(h)))
    s, h, b = request("GET", ent, query=table_sas(T, sp=sp, si="bad-sp"), signed=False)
    check(f"SAS sp={sp} with si refused", s == 403 and code(h) == "AuthenticationFailed", (s, code(h)))
# comp=acl belongs to /<table> only
for path in (f"{T}()", "Tables", "Tables()"):
    s, h, b = request("GET", path, query="comp=acl")
    check(f"comp=acl on {path}", s == 400 and code(h) == "InvalidQueryParameterValue", (s, code(h), b[:200]))

# delete_table removes the policies; the same name starts with none
s, h, b = request("PUT", T, query="comp=acl", body=acl_xml({"Id": "read", "Expiry": iso(1), "Permission": "r"}))
s, h, b = request("DELETE", f"Tables('{T}')")
check("delete table", s == 204, s)
s, h, b = request("POST", "Tables", body=('{"TableName": "%s"}' % T).encode(), headers={"Content-Type": "application/json"})
s, h, b = request("GET", T, query="comp=acl")
check("recreated table has no policies", s == 200 and ids(b) == [], (s, b))
s, h, b = request("GET", f"{T}()", query=q, signed=False)
check("old SAS does not work on the new table", s == 403 and code(h) == "AuthenticationFailed", (s, h))
request("DELETE", f"Tables('{T}')")

check.finish()
