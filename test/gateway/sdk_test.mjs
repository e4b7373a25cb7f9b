// test/gateway/sdk_test.mjs: the Azure Tables JavaScript SDK (@azure/data-tables,
// unchanged) against a live tablestore-gateway.  Run by test/t/010_gateway.pl with
//   GW_PORT     the gateway's port
//   GW_READER_KEY  the base64 key of account "reader", in its own database with
//               a table readertab it may only read (SELECT); without it, the
//               reader test is skipped
//   GW_SCHEME   https for a gateway serving TLS (its CA in NODE_EXTRA_CA_CERTS)
//   GW_STYLE    host: the account in the host name (host-style, as the SDK
//               addresses the real service), https://<account>.table.tstest:PORT;
//               those names are looked up as 127.0.0.1 here
// Every check that fails is printed; the exit status is the number of failures.
import {
	TableClient, TableServiceClient, AzureNamedKeyCredential, AzureSASCredential,
	generateTableSas, generateAccountSas, odata,
} from "@azure/data-tables";
import assert from "node:assert/strict";
import dns from "node:dns";

const port = process.env.GW_PORT;
const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const scheme = process.env.GW_SCHEME || "http";	// https: the CA in NODE_EXTRA_CA_CERTS
const hostStyle = process.env.GW_STYLE === "host";
// accountUrl: an account's endpoint, path-style or host-style
const accountUrl = (a) => hostStyle ? `${scheme}://${a}.table.tstest:${port}` : `${scheme}://127.0.0.1:${port}/${a}`;
const url = accountUrl("devstoreaccount1");

// Host-style names are not in any resolver: answer 127.0.0.1 for them
// (net.connect looks names up with dns.lookup).
if (hostStyle) {
	const lookup = dns.lookup;
	dns.lookup = function (host, options, callback) {
		if (typeof options === "function") {
			callback = options;
			options = {};
		}
		if (!/\.table\.tstest$/.test(host))
			return lookup.call(this, host, options, callback);
		if (options && options.all)
			return process.nextTick(callback, null, [{ address: "127.0.0.1", family: 4 }]);
		return process.nextTick(callback, null, "127.0.0.1", 4);
	};
}
const conn = `DefaultEndpointsProtocol=${scheme};AccountName=devstoreaccount1;AccountKey=${devKey};TableEndpoint=${url};`;
const opts = { allowInsecureConnection: true };
const cred = new AzureNamedKeyCredential("devstoreaccount1", devKey);
const svc = TableServiceClient.fromConnectionString(conn, opts);
const client = (name) => TableClient.fromConnectionString(conn, name, opts);

let failures = 0, passed = 0;
async function test(name, fn) {
	try {
		await fn();
		passed++;
		console.log(`ok   ${name}`);
	} catch (e) {
		failures++;
		console.log(`FAIL ${name}\n     ${(e && e.stack) || e}`);
	}
}

// rejects: the promise fails with this HTTP status and service error code.
async function rejects(promise, status, code) {
	let err = null;
	try {
		await promise;
	} catch (e) {
		err = e;
	}
	assert.ok(err, `expected ${status} ${code}, the call succeeded`);
	assert.equal(err.statusCode, status, `status of: ${err.message}`);
	const got = err.code || err.response?.parsedBody?.odataError?.code ||
		err.response?.headers?.get("x-ms-error-code");
	assert.equal(got, code, `code of: ${err.message}`);
	return err;
}

async function collect(iter) {
	const out = [];
	for await (const x of iter) out.push(x);
	return out;
}

const T = "sdkents";

await test("create, re-create (swallowed) and list tables", async () => {
	await svc.createTable(T);
	await svc.createTable(T);			// TableAlreadyExists is swallowed by the SDK
	const names = (await collect(svc.listTables())).map((t) => t.name);
	assert.ok(names.includes(T), names.join(","));
	const one = await collect(svc.listTables({ queryOptions: { filter: odata`TableName eq ${T}` } }));
	assert.deepEqual(one.map((t) => t.name), [T]);
});

await test("table paging with NextTableName", async () => {
	for (let i = 0; i < 5; i++) await svc.createTable(`pagetab${i}`);
	const pages = [];
	for await (const page of svc.listTables({ queryOptions: { filter: "TableName ge 'pagetab' and TableName lt 'pagetac'" } }).byPage({ maxPageSize: 2 }))
		pages.push(page.map((t) => t.name));
	assert.deepEqual(pages, [["pagetab0", "pagetab1"], ["pagetab2", "pagetab3"], ["pagetab4"]]);
	for (let i = 0; i < 5; i++) await svc.deleteTable(`pagetab${i}`);
});

await test("service properties and statistics", async () => {
	const p = await svc.getProperties();
	assert.equal(p.hourMetrics.enabled, false);
	assert.deepEqual(p.cors, []);
});

// Statistics describe the secondary and are served there only, as the
// service does.  Host-style, the SDK itself asks <account>-secondary.<host>;
// path-style it asks the endpoint it was given, so an application gives it
// .../<account>-secondary (as Azurite's tests do).
await test("service statistics at <account>-secondary; 400 at the primary", async () => {
	if (hostStyle) {
		const s = await svc.getStatistics();
		assert.equal(s.geoReplication.status, "live");
		return;
	}
	const s = await new TableServiceClient(`${url}-secondary`, cred, opts).getStatistics();
	assert.equal(s.geoReplication.status, "live");
	await rejects(svc.getStatistics(), 400, "InvalidQueryParameterValue");
});

await test("set service properties: CORS rules, metrics, a partial update", async () => {
	const rule = {
		allowedOrigins: "http://www.contoso.com,http://www.fabrikam.com", allowedMethods: "GET,PUT,MERGE",
		allowedHeaders: "x-ms-meta-data*,x-ms-meta-abc", exposedHeaders: "x-ms-meta-*", maxAgeInSeconds: 100,
	};
	let status = 0;
	await svc.setProperties({
		cors: [rule, { allowedOrigins: "*", allowedMethods: "GET", allowedHeaders: "*", exposedHeaders: "*", maxAgeInSeconds: 2 }],
		hourMetrics: { version: "1.0", enabled: true, includeAPIs: true, retentionPolicy: { enabled: true, days: 5 } },
	}, { onResponse: (res) => { status = res.status; } });
	assert.equal(status, 202);
	let p = await svc.getProperties();
	assert.equal(p.cors.length, 2);
	assert.deepEqual(p.cors[0], rule);
	assert.equal(p.hourMetrics.enabled, true);
	assert.equal(p.hourMetrics.includeAPIs, true);
	assert.equal(p.hourMetrics.retentionPolicy.days, 5);
	// logging alone: the rules and metrics stay
	await svc.setProperties({ logging: { version: "1.0", read: true, write: false, delete: true, retentionPolicy: { enabled: false } } });
	p = await svc.getProperties();
	assert.equal(p.logging.read, true);
	assert.equal(p.logging.delete, true);
	assert.equal(p.cors.length, 2);
	assert.equal(p.hourMetrics.enabled, true);
	// what a browser asks first, answered from the rules
	const pre = await fetch(`${url}/Tables`, { method: "OPTIONS",
		headers: { Origin: "http://www.fabrikam.com", "Access-Control-Request-Method": "PUT",
			"Access-Control-Request-Headers": "x-ms-meta-data1" } });
	assert.equal(pre.status, 200);
	assert.equal(pre.headers.get("access-control-allow-origin"), "http://www.fabrikam.com");
	assert.equal(pre.headers.get("access-control-max-age"), "100");
	// refused as the service refuses: six rules, a method no rule may name
	await rejects(svc.setProperties({ cors: Array(6).fill(rule) }), 400, "InvalidXmlDocument");
	await rejects(svc.setProperties({ cors: [{ ...rule, allowedMethods: "TRACE" }] }), 400, "InvalidXmlNodeValue");
	// back to the defaults
	await svc.setProperties({
		cors: [], logging: { version: "1.0", read: false, write: false, delete: false, retentionPolicy: { enabled: false } },
		hourMetrics: { version: "1.0", enabled: false, retentionPolicy: { enabled: false } },
	});
	p = await svc.getProperties();
	assert.deepEqual(p.cors, []);
	assert.equal(p.hourMetrics.enabled, false);
});

await test("table errors: bad names, missing table", async () => {
	await rejects(svc.createTable("1abc"), 400, "InvalidResourceName");
	await rejects(svc.createTable("ab"), 400, "OutOfRangeInput");
	await rejects(svc.createTable("tables"), 400, "InvalidInput");
	await svc.deleteTable("nosuchtable");	// the SDK swallows 404
	await rejects(client("nosuchtable").getEntity("a", "b"), 404, "TableNotFound");
	await rejects(client("nosuchtable").createEntity({ partitionKey: "a", rowKey: "b" }), 404, "TableNotFound");
});

const t = client(T);

await test("all eight types round-trip", async () => {
	const guid = "c9da6455-213d-42c9-9a79-3e9149a57833";
	await t.createEntity({
		partitionKey: "types", rowKey: "1",
		str: "héllo ✓ 😀", i32: 42, neg: -7, i64: BigInt("9007199254740993"),
		dbl: 2.5, dblIntegral: { value: "5", type: "Double" }, nan: { value: "NaN", type: "Double" },
		bool: true, when: new Date("2020-09-17T00:00:00.111Z"),
		g: { value: guid, type: "Guid" }, bin: new Uint8Array([0, 1, 2, 254, 255]),
	});
	const raw = await t.getEntity("types", "1", { disableTypeConversion: true });
	assert.deepEqual(raw.str, { value: "héllo ✓ 😀", type: "String" });
	assert.deepEqual(raw.i32, { value: "42", type: "Int32" });
	assert.deepEqual(raw.neg, { value: "-7", type: "Int32" });
	assert.deepEqual(raw.i64, { value: "9007199254740993", type: "Int64" });
	assert.deepEqual(raw.dbl, { value: "2.5", type: "Double" });
	assert.equal(raw.dblIntegral.type, "Double");
	assert.equal(Number(raw.dblIntegral.value), 5);
	assert.deepEqual(raw.nan, { value: "NaN", type: "Double" });
	assert.deepEqual(raw.bool, { value: "true", type: "Boolean" });
	assert.deepEqual(raw.when, { value: "2020-09-17T00:00:00.111Z", type: "DateTime" });
	assert.deepEqual(raw.g, { value: guid, type: "Guid" });
	assert.deepEqual(raw.bin, { value: Buffer.from([0, 1, 2, 254, 255]).toString("base64"), type: "Binary" });
	const e = await t.getEntity("types", "1");
	assert.equal(e.i64, BigInt("9007199254740993"));
	assert.equal(e.when.toISOString(), "2020-09-17T00:00:00.111Z");
	assert.deepEqual([...e.bin], [0, 1, 2, 254, 255]);
	assert.match(e.etag, /^W\/"datetime'.*'"$/);
	// what comes back goes back in unchanged
	await t.updateEntity(e, "Replace", { etag: e.etag });
	const again = await t.getEntity("types", "1", { disableTypeConversion: true });
	for (const k of ["str", "i32", "i64", "dbl", "bool", "when", "g", "bin"])
		assert.deepEqual(again[k], raw[k], k);
});

await test("insert, duplicate insert, point read, $select", async () => {
	const r = await t.createEntity({ partitionKey: "crud", rowKey: "a", n: 1, keep: "yes" });
	assert.match(r.etag, /datetime/);
	await rejects(t.createEntity({ partitionKey: "crud", rowKey: "a" }), 409, "EntityAlreadyExists");
	const sel = await t.getEntity("crud", "a", { queryOptions: { select: ["n"] } });
	assert.equal(sel.n, 1);
	assert.equal(sel.keep, undefined);
	await rejects(t.getEntity("crud", "missing"), 404, "ResourceNotFound");
});

await test("issue 22: annotated Boolean strings, exact $select", async () => {
	// the SDK sends {value: "false", type: "Boolean"} as "false" annotated Edm.Boolean
	await t.createEntity({ partitionKey: "bools", rowKey: "1", b: { value: "false", type: "Boolean" },
		c: { value: "TRUE", type: "Boolean" } });
	const e = await t.getEntity("bools", "1");
	assert.strictEqual(e.b, false);
	assert.strictEqual(e.c, true);
	await t.updateEntity({ partitionKey: "bools", rowKey: "1", d: { value: "True", type: "Boolean" } }, "Merge");
	assert.strictEqual((await t.getEntity("bools", "1")).d, true);
	await rejects(t.createEntity({ partitionKey: "bools", rowKey: "2", b: { value: "yes", type: "Boolean" } }), 400, "InvalidInput");
	// $select: the named properties and the ETag; the keys and Timestamp only when named
	const sel = await t.getEntity("bools", "1", { queryOptions: { select: ["b", "zz"] } });
	assert.strictEqual(sel.b, false);
	assert.strictEqual(sel.zz, null);
	assert.match(sel.etag, /^W\/"datetime'/);
	assert.strictEqual(sel.partitionKey, undefined);
	assert.strictEqual(sel.rowKey, undefined);
	assert.strictEqual(sel.timestamp, undefined);
	const named = await t.getEntity("bools", "1", { queryOptions: { select: ["RowKey", "c"] } });
	assert.strictEqual(named.rowKey, "1");
	assert.strictEqual(named.partitionKey, undefined);
	const q = await collect(t.listEntities({ queryOptions: { filter: "PartitionKey eq 'bools'", select: ["c"] } }));
	assert.equal(q.length, 1);
	assert.strictEqual(q[0].c, true);
	assert.strictEqual(q[0].partitionKey, undefined);
});

await test("replace and merge with ETags; stale ETags refused", async () => {
	const e0 = await t.getEntity("crud", "a");
	const r1 = await t.updateEntity({ partitionKey: "crud", rowKey: "a", n: 2 }, "Merge", { etag: e0.etag });
	let e1 = await t.getEntity("crud", "a");
	assert.equal(e1.n, 2);
	assert.equal(e1.keep, "yes");
	assert.equal(e1.etag, r1.etag);
	await rejects(t.updateEntity({ partitionKey: "crud", rowKey: "a", n: 3 }, "Merge", { etag: e0.etag }), 412, "UpdateConditionNotSatisfied");
	await rejects(t.updateEntity({ partitionKey: "crud", rowKey: "a", n: 3 }, "Replace", { etag: e0.etag }), 412, "UpdateConditionNotSatisfied");
	await t.updateEntity({ partitionKey: "crud", rowKey: "a", n: 3 }, "Replace", { etag: e1.etag });
	e1 = await t.getEntity("crud", "a");
	assert.equal(e1.n, 3);
	assert.equal(e1.keep, undefined);
	await t.updateEntity({ partitionKey: "crud", rowKey: "a", m: 1 }, "Merge");	// If-Match: *
	await rejects(t.updateEntity({ partitionKey: "crud", rowKey: "nope", n: 1 }, "Replace"), 404, "ResourceNotFound");
	await rejects(t.updateEntity({ partitionKey: "crud", rowKey: "nope", n: 1 }, "Merge"), 404, "ResourceNotFound");
	await rejects(t.deleteEntity("crud", "a", { etag: e0.etag }), 412, "UpdateConditionNotSatisfied");
});

await test("upserts insert and then replace or merge", async () => {
	await t.upsertEntity({ partitionKey: "up", rowKey: "1", a: 1, b: 1 }, "Merge");
	await t.upsertEntity({ partitionKey: "up", rowKey: "1", b: 2 }, "Merge");
	let e = await t.getEntity("up", "1");
	assert.equal(e.a, 1);
	assert.equal(e.b, 2);
	await t.upsertEntity({ partitionKey: "up", rowKey: "1", c: 3 }, "Replace");
	e = await t.getEntity("up", "1");
	assert.equal(e.a, undefined);
	assert.equal(e.c, 3);
	await t.upsertEntity({ partitionKey: "up", rowKey: "2", c: 4 }, "Replace");
	assert.equal((await t.getEntity("up", "2")).c, 4);
});

await test("delete with ETag and unconditionally; delete of a missing entity", async () => {
	const e = await t.getEntity("up", "1");
	await t.deleteEntity("up", "1", { etag: e.etag });
	await t.deleteEntity("up", "2");
	await rejects(t.getEntity("up", "1"), 404, "ResourceNotFound");
	await rejects(t.deleteEntity("up", "2"), 404, "ResourceNotFound");
});

await test("keys with quotes, spaces, commas, parentheses and non-ASCII", async () => {
	const pk = "ä ö'x,(1)", rk = "it''s %20 ü)";
	await t.createEntity({ partitionKey: pk, rowKey: rk, v: 1 });
	const e = await t.getEntity(pk, rk);
	assert.equal(e.partitionKey, pk);
	assert.equal(e.rowKey, rk);
	await t.updateEntity({ partitionKey: pk, rowKey: rk, v: 2 }, "Merge", { etag: e.etag });
	const q = await collect(t.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${pk} and RowKey eq ${rk}` } }));
	assert.equal(q.length, 1);
	assert.equal(q[0].v, 2);
	await t.deleteEntity(pk, rk);
	await t.createEntity({ partitionKey: "", rowKey: "", empty: true });
	assert.equal((await t.getEntity("", "")).empty, true);
});

await test("entity errors surface with their codes", async () => {
	await rejects(t.createEntity({ partitionKey: "err", rowKey: "1", "1bad": 1 }), 400, "PropertyNameInvalid");
	await rejects(t.createEntity({ partitionKey: "err", rowKey: "1", s: "x".repeat(40000) }), 400, "PropertyValueTooLarge");
	const many = { partitionKey: "err", rowKey: "1" };
	for (let i = 0; i < 253; i++) many[`p${i}`] = i;
	await rejects(t.createEntity(many), 400, "TooManyProperties");
	const big = { partitionKey: "err", rowKey: "1" };
	for (let i = 0; i < 17; i++) big[`s${i}`] = "y".repeat(32000);
	await rejects(t.createEntity(big), 400, "EntityTooLarge");
	await rejects(t.createEntity({ partitionKey: "a/b", rowKey: "1" }), 400, "OutOfRangeInput");
	await rejects(t.createEntity({ partitionKey: "err", rowKey: "1", i: { value: "abc", type: "Int64" } }), 400, "InvalidInput");
	await rejects(collect(t.listEntities({ queryOptions: { filter: "startswith(RowKey, 'a')" } })), 501, "NotImplemented");
	await rejects(collect(t.listEntities({ queryOptions: { filter: "Age gt" } })), 400, "InvalidInput");
	await rejects(t.getEntity("err", "1"), 404, "ResourceNotFound");	// nothing was applied
});

await test("2,500 entities by batches; paging through them with continuations", async () => {
	for (let b = 0; b < 25; b++) {
		const ops = [];
		for (let i = 0; i < 100; i++) {
			const n = b * 100 + i;
			ops.push(["create", { partitionKey: "many", rowKey: String(n).padStart(5, "0"), n }]);
		}
		const r = await t.submitTransaction(ops);
		assert.equal(r.status, 202);
		assert.equal(r.subResponses.length, 100);
	}
	const all = await collect(t.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${"many"}` } }));
	assert.equal(all.length, 2500);
	assert.deepEqual(all.map((e) => e.n), [...Array(2500).keys()]);
	const sizes = [];
	for await (const page of t.listEntities({ queryOptions: { filter: "PartitionKey eq 'many' and n ge 100", select: ["n"] } }).byPage({ maxPageSize: 700 }))
		sizes.push(page.length);
	assert.deepEqual(sizes, [700, 700, 700, 300]);
	const everything = await collect(t.listEntities());		// table scan across partitions
	assert.ok(everything.length >= 2500);
	const top = [];
	for await (const page of t.listEntities({ queryOptions: { filter: "PartitionKey eq 'many'" } }).byPage({ maxPageSize: 5 })) {
		top.push(page.map((e) => e.n));
		break;
	}
	assert.deepEqual(top, [[0, 1, 2, 3, 4]]);
});

await test("batch of mixed operations applies all", async () => {
	const e = await t.getEntity("many", "00001");
	const r = await t.submitTransaction([
		["update", { partitionKey: "many", rowKey: "00000", n: -1 }, "Replace"],
		["update", { partitionKey: "many", rowKey: "00001", x: 1 }, "Merge", { etag: e.etag }],
		["delete", { partitionKey: "many", rowKey: "00002" }],
		["upsert", { partitionKey: "many", rowKey: "new1", n: 9 }, "Merge"],
		["upsert", { partitionKey: "many", rowKey: "new2", n: 9 }, "Replace"],
		["create", { partitionKey: "many", rowKey: "new3", n: 9 }],
	]);
	assert.equal(r.subResponses.length, 6);
	assert.equal((await t.getEntity("many", "00000")).n, -1);
	assert.equal((await t.getEntity("many", "00001")).x, 1);
	await rejects(t.getEntity("many", "00002"), 404, "ResourceNotFound");
	assert.equal((await t.getEntity("many", "new3")).n, 9);
});

await test("failing batch: the failing operation's index and code, nothing applied", async () => {
	const err = await rejects(t.submitTransaction([
		["create", { partitionKey: "many", rowKey: "willnotexist" }],
		["update", { partitionKey: "many", rowKey: "00003", n: 0 }, "Merge"],
		["create", { partitionKey: "many", rowKey: "00004" }],
	]), 409, "EntityAlreadyExists");
	assert.match(err.message, /^2:/);
	await rejects(t.getEntity("many", "willnotexist"), 404, "ResourceNotFound");
	assert.equal((await t.getEntity("many", "00003")).n, 3);
	const stale = await rejects(t.submitTransaction([
		["update", { partitionKey: "many", rowKey: "00005", n: 0 }, "Merge", { etag: "W/\"datetime'2001-01-01T00%3A00%3A00Z'\"" }],
	]), 412, "UpdateConditionNotSatisfied");
	assert.match(stale.message, /^0:/);
	await rejects(t.submitTransaction([["update", { partitionKey: "many", rowKey: "nothere", n: 0 }, "Merge"]]), 404, "ResourceNotFound");
});

// ---- shared access signatures ----
const sasClient = (table, sas) => new TableClient(url, table, new AzureSASCredential(sas), opts);
const inHour = new Date(Date.now() + 3600 * 1000);

await test("table SAS: each permission", async () => {
	const r = sasClient(T, generateTableSas(T, cred, { permissions: { query: true }, expiresOn: inHour }));
	assert.equal((await r.getEntity("many", "00010")).n, 10);
	assert.ok((await collect(r.listEntities({ queryOptions: { filter: "PartitionKey eq 'crud'" } }))).length >= 1);
	await rejects(r.createEntity({ partitionKey: "sas", rowKey: "1" }), 403, "AuthorizationPermissionMismatch");
	await rejects(r.deleteEntity("many", "00010"), 403, "AuthorizationPermissionMismatch");

	const a = sasClient(T, generateTableSas(T, cred, { permissions: { add: true }, expiresOn: inHour }));
	await a.createEntity({ partitionKey: "sas", rowKey: "1", v: 1 });
	await rejects(a.getEntity("sas", "1"), 403, "AuthorizationPermissionMismatch");
	await rejects(a.updateEntity({ partitionKey: "sas", rowKey: "1", v: 2 }, "Merge"), 403, "AuthorizationPermissionMismatch");
	await rejects(a.upsertEntity({ partitionKey: "sas", rowKey: "1", v: 2 }), 403, "AuthorizationPermissionMismatch");

	const u = sasClient(T, generateTableSas(T, cred, { permissions: { update: true }, expiresOn: inHour }));
	await u.updateEntity({ partitionKey: "sas", rowKey: "1", v: 2 }, "Merge");
	await rejects(u.deleteEntity("sas", "1"), 403, "AuthorizationPermissionMismatch");

	const au = sasClient(T, generateTableSas(T, cred, { permissions: { add: true, update: true }, expiresOn: inHour }));
	await au.upsertEntity({ partitionKey: "sas", rowKey: "2", v: 1 });
	await au.submitTransaction([["create", { partitionKey: "sas", rowKey: "3" }], ["upsert", { partitionKey: "sas", rowKey: "2", v: 5 }]]);
	await rejects(au.submitTransaction([["delete", { partitionKey: "sas", rowKey: "3" }]]), 403, "AuthorizationPermissionMismatch");

	const d = sasClient(T, generateTableSas(T, cred, { permissions: { delete: true }, expiresOn: inHour }));
	await d.deleteEntity("sas", "1");
	assert.equal((await t.getEntity("sas", "2")).v, 5);

	// another table, and table-level operations, are out of a table SAS's scope
	const other = sasClient("othertable", generateTableSas(T, cred, { permissions: { query: true }, expiresOn: inHour }).replace(/tn=[^&]*/, "tn=othertable"));
	await rejects(other.getEntity("many", "00010"), 403, "AuthenticationFailed");
	const sasSvc = new TableServiceClient(url, new AzureSASCredential(generateTableSas(T, cred, { permissions: { query: true, add: true, delete: true }, expiresOn: inHour })), opts);
	await rejects(sasSvc.createTable("sascreated"), 403, "AuthorizationPermissionMismatch");
});

await test("table SAS: key range, in range allowed, out of range refused", async () => {
	const sas = generateTableSas(T, cred, {
		permissions: { query: true, add: true, update: true, delete: true }, expiresOn: inHour,
		startPartitionKey: "many", startRowKey: "00100", endPartitionKey: "many", endRowKey: "00199",
	});
	const c = sasClient(T, sas);
	assert.equal((await c.getEntity("many", "00150")).n, 150);
	await rejects(c.getEntity("many", "00099"), 403, "AuthorizationPermissionMismatch");
	await rejects(c.getEntity("many", "00200"), 403, "AuthorizationPermissionMismatch");
	await rejects(c.getEntity("crud", "a"), 403, "AuthorizationPermissionMismatch");
	await c.updateEntity({ partitionKey: "many", rowKey: "00100", inrange: true }, "Merge");
	await rejects(c.updateEntity({ partitionKey: "many", rowKey: "00300", inrange: true }, "Merge"), 403, "AuthorizationPermissionMismatch");
	await rejects(c.createEntity({ partitionKey: "zzz", rowKey: "1" }), 403, "AuthorizationPermissionMismatch");
	const seen = await collect(c.listEntities());
	assert.equal(seen.length, 100);
	assert.equal(seen[0].rowKey, "00100");
	assert.equal(seen[99].rowKey, "00199");
	const paged = [];
	for await (const page of c.listEntities().byPage({ maxPageSize: 30 })) paged.push(page.length);
	assert.deepEqual(paged, [30, 30, 30, 10]);
	// the range holds when $select leaves the keys out (issue 22)
	const projected = [];
	for await (const page of c.listEntities({ queryOptions: { select: ["n"] } }).byPage({ maxPageSize: 30 }))
		projected.push(page.length);
	assert.deepEqual(projected, [30, 30, 30, 10]);
});

await test("stored access policies: set, get, a SAS naming one, revoked by removing it", async () => {
	const start = new Date(Date.now() - 3600 * 1000);
	await t.setAccessPolicy([
		{ id: "readers", accessPolicy: { start, expiry: inHour, permission: "r" } },
		{ id: "adders", accessPolicy: { permission: "a" } },
	]);
	const got = await t.getAccessPolicy();
	assert.deepEqual(got.map((x) => x.id), ["readers", "adders"]);
	assert.equal(got[0].accessPolicy.permission, "r");
	assert.equal(got[0].accessPolicy.expiry.getTime(), Math.floor(inHour.getTime() / 1000) * 1000);
	// the policy gives permissions and window; the SAS only names it
	const r = sasClient(T, generateTableSas(T, cred, { identifier: "readers" }));
	assert.equal((await r.getEntity("many", "00010")).n, 10);
	await rejects(r.createEntity({ partitionKey: "pol", rowKey: "1" }), 403, "AuthorizationPermissionMismatch");
	// a SAS cannot read or set policies
	await rejects(r.getAccessPolicy(), 403, "AuthorizationPermissionMismatch");
	// expiry from the SAS, permission from the policy
	const a = sasClient(T, generateTableSas(T, cred, { identifier: "adders", expiresOn: inHour }));
	await a.createEntity({ partitionKey: "pol", rowKey: "1" });
	await t.deleteEntity("pol", "1");
	// a field in both is refused
	await rejects(sasClient(T, generateTableSas(T, cred, { identifier: "readers", permissions: { query: true } })).getEntity("many", "00010"),
		403, "AuthenticationFailed");
	// more than five is refused
	await rejects(t.setAccessPolicy([1, 2, 3, 4, 5, 6].map((i) => ({ id: `p${i}` }))), 400, "InvalidXmlDocument");
	// removing the policies revokes the SAS on its next request
	await t.setAccessPolicy([]);
	assert.deepEqual(await t.getAccessPolicy(), []);
	await rejects(r.getEntity("many", "00010"), 403, "AuthenticationFailed");
});

await test("account SAS: listing and reading allowed, writing refused; expired refused", async () => {
	const ro = generateAccountSas(cred, {
		permissions: { list: true, query: true }, resourceTypes: "sco",
		expiresOn: inHour,
	});
	const s = new TableServiceClient(url, new AzureSASCredential(ro), opts);
	assert.ok((await collect(s.listTables())).some((x) => x.name === T));
	await rejects(s.createTable("sasmade"), 403, "AuthorizationPermissionMismatch");
	const c = sasClient(T, ro);
	assert.equal((await c.getEntity("many", "00010")).n, 10);
	await rejects(c.createEntity({ partitionKey: "acct", rowKey: "1" }), 403, "AuthorizationPermissionMismatch");

	const rw = generateAccountSas(cred, {
		permissions: { write: true, add: true, update: true, delete: true, query: true, list: true },
		resourceTypes: "co", expiresOn: inHour,
	});
	const s2 = new TableServiceClient(url, new AzureSASCredential(rw), opts);
	await s2.createTable("sasmade");
	const c2 = sasClient("sasmade", rw);
	await c2.createEntity({ partitionKey: "acct", rowKey: "1" });
	await c2.deleteEntity("acct", "1");
	await s2.deleteTable("sasmade");

	const expired = generateAccountSas(cred, {
		permissions: { list: true }, resourceTypes: "c",
		expiresOn: new Date(Date.now() - 60000),
	});
	await rejects(collect(new TableServiceClient(url, new AzureSASCredential(expired), opts).listTables()), 403, "AuthenticationFailed");
	const notyet = generateTableSas(T, cred, { permissions: { query: true }, startsOn: new Date(Date.now() + 3600000), expiresOn: new Date(Date.now() + 7200000) });
	await rejects(sasClient(T, notyet).getEntity("many", "00010"), 403, "AuthenticationFailed");
});

await test("wrong key is refused", async () => {
	const bad = new TableClient(url, T, new AzureNamedKeyCredential("devstoreaccount1", Buffer.alloc(64, 7).toString("base64")), opts);
	await rejects(bad.getEntity("many", "00010"), 403, "AuthenticationFailed");
});

if (process.env.GW_READER_KEY) {
	await test("an account's role decides what it may do (reader: SELECT only); its tables are its own", async () => {
		const key = process.env.GW_READER_KEY;
		const rurl = accountUrl("reader");
		const r = new TableClient(rurl, "readertab", new AzureNamedKeyCredential("reader", key), opts);
		assert.equal((await r.getEntity("r", "00010")).n, 10);
		assert.equal((await collect(r.listEntities())).length, 20);
		await rejects(r.createEntity({ partitionKey: "reader", rowKey: "1" }), 403, "AuthorizationPermissionMismatch");
		await rejects(r.deleteEntity("r", "00010"), 403, "AuthorizationPermissionMismatch");
		const rs = new TableServiceClient(rurl, new AzureNamedKeyCredential("reader", key), opts);
		assert.deepEqual((await collect(rs.listTables())).map((x) => x.name), ["readertab"]);
		await rejects(rs.deleteTable("readertab"), 403, "AuthorizationPermissionMismatch");
		await rejects(rs.createTable("readermade"), 403, "AuthorizationPermissionMismatch");
		// devstoreaccount1's table does not exist for reader
		await rejects(new TableClient(rurl, T, new AzureNamedKeyCredential("reader", key), opts).getEntity("many", "00010"),
			404, "TableNotFound");
		assert.equal((await t.getEntity("many", "00010")).n, 10);
	});
} else
	console.log("skip the reader account's test (no GW_READER_KEY)");

await test("delete table", async () => {
	await svc.deleteTable(T);
	await rejects(t.getEntity("many", "00010"), 404, "TableNotFound");
});

console.log(`${passed} passed, ${failures} failed`);
process.exit(failures);
