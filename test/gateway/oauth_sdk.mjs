// test/gateway/oauth_sdk.mjs: the JavaScript SDK with a TokenCredential
// against an HTTPS gateway with OAuth (run by oauth_test.py, which mints the
// token: OAUTH_URL, OAUTH_TOKEN, OAUTH_TABLE; NODE_EXTRA_CA_CERTS trusts the
// gateway's certificate).  Creates the table, upserts, reads, queries and
// deletes it; the SDK's own errors fail it.
import { TableClient } from "@azure/data-tables";
import assert from "node:assert/strict";

const credential = {
	getToken: async () => ({ token: process.env.OAUTH_TOKEN, expiresOnTimestamp: Date.now() + 3_000_000 }),
};
const client = new TableClient(process.env.OAUTH_URL, process.env.OAUTH_TABLE, credential);
await client.createTable();
await client.upsertEntity({ partitionKey: "p", rowKey: "js", n: 7 });
const got = await client.getEntity("p", "js");
assert.equal(got.n, 7);
let count = 0;
for await (const e of client.listEntities({ queryOptions: { filter: "PartitionKey eq 'p'" } })) {
	assert.equal(e.rowKey, "js");
	count++;
}
assert.equal(count, 1);
await client.deleteTable();
console.log("oauth_sdk.mjs: ok");
