#!/usr/bin/python3
# test/gateway/sdk_test.py: the Azure Tables Python SDK as Debian ships it
# (python3-azure, azure-data-tables 12.4.2, which signs with Shared Key
# rather than Shared Key Lite) against a live tablestore-gateway (GW_PORT).
# Every failed check is printed; the exit status is the number of failures.
import os
import sys
import traceback
import uuid
from datetime import datetime, timedelta, timezone

from azure.core import MatchConditions
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure.core.exceptions import (ClientAuthenticationError, HttpResponseError, ResourceExistsError,
                                   ResourceModifiedError, ResourceNotFoundError)
from azure.data.tables import (AccountSasPermissions, EdmType, EntityProperty, ResourceTypes,
                               TableAnalyticsLogging, TableClient, TableCorsRule, TableMetrics,
                               TableRetentionPolicy, TableSasPermissions, TableServiceClient,
                               TableTransactionError, UpdateMode, generate_account_sas, generate_table_sas)

PORT = os.environ["GW_PORT"]
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
URL = f"http://127.0.0.1:{PORT}/devstoreaccount1"
CONN = f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={KEY};TableEndpoint={URL};"
CRED = AzureNamedKeyCredential("devstoreaccount1", KEY)
T = "pyents"

svc = TableServiceClient.from_connection_string(CONN)
t = svc.get_table_client(T)
passed = failed = 0


def test(fn):
    global passed, failed
    try:
        fn()
        passed += 1
        print(f"ok   {fn.__doc__}")
    except Exception:
        failed += 1
        print(f"FAIL {fn.__doc__}")
        traceback.print_exc(file=sys.stdout)
    return fn


def raises(exc, code, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        got = getattr(e, "error_code", None)
        if got is None and getattr(e, "response", None) is not None:
            got = e.response.headers.get("x-ms-error-code")   # some calls re-raise undecoded
        assert code is None or got == code, f"{type(e).__name__} {got}, want {code}: {e}"
        return e
    raise AssertionError(f"expected {exc.__name__} {code}; the call succeeded")


@test
def create_tables():
    "create table, 409 on a second create, list with a filter and pages"
    svc.create_table(T)
    raises(ResourceExistsError, "TableAlreadyExists", svc.create_table, T)
    svc.create_table_if_not_exists(T)
    names = [x.name for x in svc.query_tables(f"TableName eq '{T}'")]
    assert names == [T], names
    for i in range(3):
        svc.create_table(f"pypage{i}")
    pages = [[x.name for x in page] for page in
             svc.query_tables("TableName ge 'pypage' and TableName lt 'pypagf'", results_per_page=2).by_page()]
    assert pages == [["pypage0", "pypage1"], ["pypage2"]], pages
    for i in range(3):
        svc.delete_table(f"pypage{i}")
    svc.delete_table("nosuchtable")     # 404 swallowed
    # this SDK turns InvalidResourceName and OutOfRangeInput on a table name into ValueError
    raises(ValueError, None, svc.create_table, "1abc")
    raises(ValueError, None, svc.create_table, "ab")


@test
def service_calls():
    "service properties and statistics (the secondary endpoint, signed as this SDK signs it)"
    p = svc.get_service_properties()
    assert p["cors"] == [], p
    st = svc.get_service_stats()
    assert st["geo_replication"]["status"] == "live", st


@test
def set_service_properties():
    "set_service_properties: CORS rules and metrics, a partial update, refusals"
    rule = TableCorsRule(["http://www.contoso.com", "http://www.fabrikam.com"], ["GET", "PUT"],
                         allowed_headers=["x-ms-meta-data*"], exposed_headers=["x-ms-meta-*"], max_age_in_seconds=100)
    svc.set_service_properties(
        hour_metrics=TableMetrics(enabled=True, include_apis=True, retention_policy=TableRetentionPolicy(enabled=True, days=3)),
        cors=[rule])
    p = svc.get_service_properties()
    assert len(p["cors"]) == 1, p
    c = p["cors"][0]
    assert c.allowed_origins == ["http://www.contoso.com", "http://www.fabrikam.com"], c.allowed_origins
    assert c.allowed_methods == ["GET", "PUT"] and c.max_age_in_seconds == 100, c
    assert p["hour_metrics"].enabled and p["hour_metrics"].retention_policy.days == 3, p["hour_metrics"]
    # logging alone: the rules stay
    svc.set_service_properties(analytics_logging=TableAnalyticsLogging(read=True, delete=True))
    p = svc.get_service_properties()
    assert p["analytics_logging"].read and p["analytics_logging"].delete, p["analytics_logging"]
    assert len(p["cors"]) == 1 and p["hour_metrics"].enabled, p
    raises(HttpResponseError, "InvalidXmlDocument", svc.set_service_properties, cors=[rule] * 6)
    raises(HttpResponseError, "InvalidXmlNodeValue", svc.set_service_properties,
           minute_metrics=TableMetrics(enabled=False, include_apis=True))
    svc.set_service_properties(analytics_logging=TableAnalyticsLogging(), hour_metrics=TableMetrics(), cors=[])
    p = svc.get_service_properties()
    assert p["cors"] == [] and not p["hour_metrics"].enabled and not p["analytics_logging"].read, p


@test
def types():
    "all eight types round-trip (Python annotates every string and float)"
    when = datetime(2021, 3, 4, 5, 6, 7, 123456, tzinfo=timezone.utc)
    g = uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")
    e = {"PartitionKey": "types", "RowKey": "1", "s": "héllo ✓ 😀", "i": 42,
         "l": EntityProperty(2 ** 40, EdmType.INT64), "d": 2.0, "nan": float("nan"),
         "b": True, "t": when, "g": g, "bin": b"\x00\x01\xfe\xff"}
    r = t.create_entity(e)
    assert r["etag"].startswith('W/"datetime'), r
    got = t.get_entity("types", "1")
    assert got["s"] == "héllo ✓ 😀"
    assert got["i"] == 42
    assert got["l"] == EntityProperty(2 ** 40, EdmType.INT64) or got["l"] == 2 ** 40, repr(got["l"])
    assert got["d"] == 2.0 and isinstance(got["d"], float), repr(got["d"])
    assert got["nan"] != got["nan"]
    assert got["b"] is True
    assert got["t"] == when, repr(got["t"])
    assert got["g"] == g, repr(got["g"])
    assert got["bin"] == b"\x00\x01\xfe\xff", repr(got["bin"])
    # a returned entity goes back in unchanged
    t.update_entity(got, mode=UpdateMode.REPLACE, etag=got.metadata["etag"], match_condition=MatchConditions.IfNotModified)
    again = t.get_entity("types", "1")
    for k in ("s", "i", "d", "b", "t", "g", "bin"):
        assert again[k] == got[k], k


@test
def crud():
    "insert, conditional replace and merge, stale ETags, upserts, delete"
    t.create_entity({"PartitionKey": "crud", "RowKey": "a", "n": 1, "keep": "yes"})
    raises(ResourceExistsError, "EntityAlreadyExists", t.create_entity, {"PartitionKey": "crud", "RowKey": "a"})
    e0 = t.get_entity("crud", "a")
    t.update_entity({"PartitionKey": "crud", "RowKey": "a", "n": 2}, mode=UpdateMode.MERGE,
                    etag=e0.metadata["etag"], match_condition=MatchConditions.IfNotModified)
    e1 = t.get_entity("crud", "a")
    assert e1["n"] == 2 and e1["keep"] == "yes"
    raises(ResourceModifiedError, "UpdateConditionNotSatisfied", t.update_entity,
           {"PartitionKey": "crud", "RowKey": "a", "n": 3}, mode=UpdateMode.REPLACE,
           etag=e0.metadata["etag"], match_condition=MatchConditions.IfNotModified)
    raises(ResourceModifiedError, "UpdateConditionNotSatisfied", t.delete_entity, "crud", "a",
           etag=e0.metadata["etag"], match_condition=MatchConditions.IfNotModified)
    t.update_entity({"PartitionKey": "crud", "RowKey": "a", "n": 3}, mode=UpdateMode.REPLACE)
    assert "keep" not in t.get_entity("crud", "a")
    raises(ResourceNotFoundError, "ResourceNotFound", t.update_entity, {"PartitionKey": "crud", "RowKey": "zz"})
    t.upsert_entity({"PartitionKey": "crud", "RowKey": "u", "a": 1}, mode=UpdateMode.MERGE)
    t.upsert_entity({"PartitionKey": "crud", "RowKey": "u", "b": 2}, mode=UpdateMode.MERGE)
    u = t.get_entity("crud", "u")
    assert u["a"] == 1 and u["b"] == 2
    t.upsert_entity({"PartitionKey": "crud", "RowKey": "u", "c": 3}, mode=UpdateMode.REPLACE)
    assert "a" not in t.get_entity("crud", "u")
    t.delete_entity("crud", "u")
    t.delete_entity("crud", "u")        # 404 swallowed by this SDK
    raises(ResourceNotFoundError, "ResourceNotFound", t.get_entity, "crud", "u")
    raises(ResourceNotFoundError, "TableNotFound", svc.get_table_client("nosuchtable").get_entity, "a", "b")
    # keys that need quoting and percent-encoding
    pk, rk = "ä ö'x,(1)", "it''s %20 ü)"
    t.create_entity({"PartitionKey": pk, "RowKey": rk, "v": 1})
    assert t.get_entity(pk, rk)["v"] == 1
    t.update_entity({"PartitionKey": pk, "RowKey": rk, "v": 2})
    assert [e["v"] for e in t.query_entities("PartitionKey eq @pk and RowKey eq @rk",
                                             parameters={"pk": pk, "rk": rk})] == [2]
    t.delete_entity(pk, rk)


@test
def errors():
    "entity errors surface with their codes"
    raises(HttpResponseError, "PropertyNameInvalid", t.create_entity, {"PartitionKey": "e", "RowKey": "1", "1x": 1})
    raises(HttpResponseError, "PropertyValueTooLarge", t.create_entity,
           {"PartitionKey": "e", "RowKey": "1", "s": "x" * 40000})
    raises(HttpResponseError, "NotImplemented", lambda: list(t.query_entities("startswith(RowKey, 'a')")))
    raises(HttpResponseError, "InvalidInput", lambda: list(t.query_entities("Age gt")))


@test
def boolean_strings():
    "issue 22: a Boolean as an annotated string, \"true\"/\"false\" in any case, stored as a Boolean"
    t.create_entity({"PartitionKey": "bools", "RowKey": "1", "b": EntityProperty("false", EdmType.BOOLEAN),
                     "c": EntityProperty("TRUE", EdmType.BOOLEAN)})
    e = t.get_entity("bools", "1")
    assert e["b"] is False and e["c"] is True, dict(e)
    raises(HttpResponseError, "InvalidInput", t.create_entity,
           {"PartitionKey": "bools", "RowKey": "2", "b": EntityProperty("yes", EdmType.BOOLEAN)})


@test
def paging_and_batches():
    "3,000 entities by batches, paged with continuations; a failing batch applies nothing"
    for b in range(30):
        ops = [("create", {"PartitionKey": "many", "RowKey": f"{b * 100 + i:05d}", "n": b * 100 + i})
               for i in range(100)]
        res = t.submit_transaction(ops)
        assert len(res) == 100
    ns = [e["n"] for e in t.query_entities("PartitionKey eq 'many'")]
    assert ns == list(range(3000)), len(ns)
    sizes = [len(list(p)) for p in t.query_entities("PartitionKey eq 'many' and n lt 1000",
                                                     results_per_page=300, select=["n"]).by_page()]
    assert sizes == [300, 300, 300, 100], sizes
    sel = next(iter(t.query_entities("PartitionKey eq 'many'", select=["n"])))
    # as the service: exactly the named properties and the ETag (issue 22)
    assert set(sel.keys()) == {"n"} and sel.metadata["etag"].startswith("W/"), (sel.keys(), sel.metadata)
    sel = t.get_entity("many", "00001", select=["RowKey", "nope"])
    assert dict(sel) == {"RowKey": "00001", "nope": None}, dict(sel)
    e1 = t.get_entity("many", "00001")
    t.submit_transaction([
        ("update", {"PartitionKey": "many", "RowKey": "00000", "n": -1}, {"mode": "replace"}),
        ("update", {"PartitionKey": "many", "RowKey": "00001", "x": 1}, {"mode": "merge", "etag": e1.metadata["etag"],
                                                                          "match_condition": MatchConditions.IfNotModified}),
        ("delete", {"PartitionKey": "many", "RowKey": "00002"}),
        ("upsert", {"PartitionKey": "many", "RowKey": "new1"}),
    ])
    assert t.get_entity("many", "00000")["n"] == -1
    raises(ResourceNotFoundError, None, t.get_entity, "many", "00002")
    err = raises(TableTransactionError, "EntityAlreadyExists", t.submit_transaction, [
        ("create", {"PartitionKey": "many", "RowKey": "willnotexist"}),
        ("create", {"PartitionKey": "many", "RowKey": "00003"}),
    ])
    assert getattr(err, "index", 1) == 1, err.index
    raises(ResourceNotFoundError, None, t.get_entity, "many", "willnotexist")


@test
def sas():
    "table SAS per permission and key range; account SAS; expired SAS"
    exp = datetime.now(timezone.utc) + timedelta(hours=1)

    def client(token, table=T):
        return TableClient(URL, table, credential=AzureSasCredential(token))

    r = client(generate_table_sas(CRED, T, permission=TableSasPermissions(read=True), expiry=exp))
    assert r.get_entity("many", "00010")["n"] == 10
    raises(HttpResponseError, "AuthorizationPermissionMismatch", r.create_entity, {"PartitionKey": "s", "RowKey": "1"})
    a = client(generate_table_sas(CRED, T, permission=TableSasPermissions(add=True), expiry=exp))
    a.create_entity({"PartitionKey": "s", "RowKey": "1"})
    raises(HttpResponseError, "AuthorizationPermissionMismatch", a.delete_entity, "s", "1")
    d = client(generate_table_sas(CRED, T, permission=TableSasPermissions(delete=True), expiry=exp))
    d.delete_entity("s", "1")
    rng = client(generate_table_sas(CRED, T, permission=TableSasPermissions(read=True, update=True), expiry=exp,
                                    start_pk="many", start_rk="00100", end_pk="many", end_rk="00199"))
    assert rng.get_entity("many", "00100")["n"] == 100
    raises(HttpResponseError, "AuthorizationPermissionMismatch", rng.get_entity, "many", "00200")
    rng.update_entity({"PartitionKey": "many", "RowKey": "00150", "inrange": True})
    raises(HttpResponseError, "AuthorizationPermissionMismatch", rng.update_entity,
           {"PartitionKey": "many", "RowKey": "00250", "inrange": True})
    assert len(list(rng.list_entities())) == 100
    acct = generate_account_sas(CRED, resource_types=ResourceTypes(object=True),
                                permission=AccountSasPermissions(read=True), expiry=exp)
    assert client(acct).get_entity("many", "00010")["n"] == 10
    raises(HttpResponseError, "AuthorizationPermissionMismatch", client(acct).create_entity,
           {"PartitionKey": "s", "RowKey": "2"})
    old = client(generate_table_sas(CRED, T, permission=TableSasPermissions(read=True),
                                    expiry=datetime.now(timezone.utc) - timedelta(minutes=1)))
    raises(ClientAuthenticationError, "AuthenticationFailed", old.get_entity, "many", "00010")
    bad = TableClient(URL, T, credential=AzureNamedKeyCredential("devstoreaccount1", "AAAA" * 16))
    raises(ClientAuthenticationError, "AuthenticationFailed", bad.get_entity, "many", "00010")


@test
def access_policies():
    "stored access policies: set, get, a SAS naming one, revoked by removing it"
    from azure.data.tables import TableAccessPolicy
    exp = datetime.now(timezone.utc) + timedelta(hours=1)
    start = datetime.now(timezone.utc) - timedelta(hours=1)
    t.set_table_access_policy({"readers": TableAccessPolicy(start=start, expiry=exp, permission="r"),
                               "adders": TableAccessPolicy(permission="a"),
                               "empty": None})
    got = t.get_table_access_policy()
    assert sorted(got) == ["adders", "empty", "readers"], got
    assert got["readers"].permission == "r", vars(got["readers"])
    assert got["readers"].expiry.replace(microsecond=0) == exp.replace(microsecond=0), vars(got["readers"])
    r = TableClient(URL, T, credential=AzureSasCredential(generate_table_sas(CRED, T, policy_id="readers")))
    assert r.get_entity("many", "00010")["n"] == 10
    raises(HttpResponseError, "AuthorizationPermissionMismatch", r.create_entity, {"PartitionKey": "pol", "RowKey": "1"})
    raises(HttpResponseError, "AuthorizationPermissionMismatch", r.get_table_access_policy)
    a = TableClient(URL, T, credential=AzureSasCredential(generate_table_sas(CRED, T, policy_id="adders", expiry=exp)))
    a.create_entity({"PartitionKey": "pol", "RowKey": "1"})
    t.delete_entity("pol", "1")
    both = TableClient(URL, T, credential=AzureSasCredential(
        generate_table_sas(CRED, T, policy_id="readers", permission=TableSasPermissions(read=True))))
    raises(ClientAuthenticationError, "AuthenticationFailed", both.get_entity, "many", "00010")
    # the SDK turns the service's 400 InvalidXmlDocument for a sixth policy into a ValueError
    try:
        t.set_table_access_policy({f"p{i}": TableAccessPolicy(permission="r") for i in range(6)})
        raise AssertionError("six policies were accepted")
    except ValueError as e:
        assert "Too many access policies" in str(e), e
    t.set_table_access_policy({})
    assert t.get_table_access_policy() == {}
    raises(ClientAuthenticationError, "AuthenticationFailed", r.get_entity, "many", "00010")


@test
def drop():
    "delete table"
    svc.delete_table(T)
    raises(ResourceNotFoundError, "TableNotFound", t.get_entity, "many", "00010")


print(f"{passed} passed, {failed} failed")
sys.exit(failed)
