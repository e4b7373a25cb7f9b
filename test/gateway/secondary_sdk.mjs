// test/gateway/secondary_sdk.mjs: the Azure Tables JavaScript SDK
// (@azure/data-tables, unchanged) reading from the read-access secondary
// (<account>-secondary) of a gateway whose secondary is a hot standby
// (--secondary-db).  Run by test/t/012_secondary.pl with
//   GW_PORT       the gateway's port
//   SEC_TABLE     a table written at the primary and replayed on the standby,
//                 with entity (PartitionKey 'p', RowKey '1', N 1)
// Prints each check; the exit status is the number of failures.
import { TableClient, TableServiceClient, AzureNamedKeyCredential } from "@azure/data-tables";
import assert from "node:assert/strict";

const port = process.env.GW_PORT;
const table = process.env.SEC_TABLE;
const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const cred = new AzureNamedKeyCredential("devstoreaccount1", devKey);
const opts = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
const secondary = `http://127.0.0.1:${port}/devstoreaccount1-secondary`;
let failures = 0;

// test: run one named check, printing its outcome
async function test(name, fn) {
	try {
		await fn();
		console.log(`ok: ${name}`);
	} catch (e) {
		failures++;
		console.log(`FAIL: ${name}: ${e.stack || e}`);
	}
}

await test("get an entity and query at the secondary endpoint", async () => {
	const t = new TableClient(secondary, table, cred, opts);
	const e = await t.getEntity("p", "1");
	assert.equal(e.N, 1);
	const rows = [];
	for await (const x of t.listEntities({ queryOptions: { filter: "N eq 1 and RowKey le '1'" } }))
		rows.push(x.rowKey);
	assert.deepEqual(rows, ["1"]);
});

await test("list tables at the secondary endpoint", async () => {
	const names = [];
	for await (const x of new TableServiceClient(secondary, cred, opts).listTables())
		names.push(x.name);
	assert.ok(names.includes(table), names.join(","));
});

await test("a write at the secondary endpoint is refused", async () => {
	const t = new TableClient(secondary, table, cred, opts);
	await assert.rejects(t.createEntity({ partitionKey: "p", rowKey: "sdk" }),
		(e) => e.statusCode === 403);
});

await test("getStatistics at the secondary: live, with a LastSyncTime", async () => {
	const s = await new TableServiceClient(secondary, cred, opts).getStatistics();
	assert.equal(s.geoReplication.status, "live");
	assert.ok(s.geoReplication.lastSyncTime instanceof Date, String(s.geoReplication.lastSyncTime));
	const age = Date.now() - s.geoReplication.lastSyncTime.getTime();
	assert.ok(age >= -2000 && age < 600000, `LastSyncTime ${s.geoReplication.lastSyncTime.toISOString()}`);
});

process.exit(failures);
