// bench/gateway_sdk.mjs: one workload of bench/gateway_sdk.sh, driven by the
// official Azure Tables JavaScript SDK (@azure/data-tables, as pinned in
// test/gateway/package-lock.json), the same for tablestore-gateway and
// Azurite.  Prints one CSV line:
//   workload,entities,seconds,entities_per_s,errors
// Usage: node gateway_sdk.mjs URL TABLE WORKLOAD ENTITIES
//   URL       http://127.0.0.1:PORT/devstoreaccount1
//   WORKLOAD  create (the table), upsert16 (single upserts, 16 in flight),
//             upsert1 (single upserts, one at a time), batch (transactions
//             of 100 inserts, 4 in flight), read (the whole table, by pages
//             of 1,000 following the continuation)
// Each entity has 11 properties: PartitionKey, RowKey and 9 of the EDM
// types (strings, Int32, Int64, Double, Boolean, DateTime, Guid).
import { createRequire } from "node:module";

// the SDK that test/gateway/run.sh installs (npm ci in test/gateway)
const { TableClient, TableServiceClient, AzureNamedKeyCredential } =
	createRequire(new URL("../test/gateway/package.json", import.meta.url))("@azure/data-tables");

const [url, table, workload, countArg] = process.argv.slice(2);
const count = Number(countArg || 0);
const cred = new AzureNamedKeyCredential("devstoreaccount1",
	"Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==");
const opts = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
const client = new TableClient(url, table, cred, opts);

const pad = (n, w) => String(n).padStart(w, "0");
const day = Date.UTC(2024, 0, 1);
// entity: the i-th entity of a workload (100 to a partition)
const entity = (i) => ({
	partitionKey: `p${pad(Math.floor(i / 100), 6)}`,
	rowKey: pad(i % 100, 3),
	FirstName: `Name${i}`,
	LastName: "Smith",
	Email: `user${i}@example.com`,
	Age: 18 + (i % 50),
	Score: 1.5 * i + 0.25,
	Active: i % 2 === 0,
	Joined: new Date(day + i * 1000),
	Id: { type: "Guid", value: `00000000-0000-4000-8000-${pad(i, 12)}` },
	Balance: { type: "Int64", value: String(1e12 + i) },
});

let errors = 0;
// guard: run one call, counting (and showing the first few) failures
async function guard(f) {
	try {
		await f();
	} catch (e) {
		if (errors++ < 3)
			console.error(`${workload}: ${String(e.statusCode || "")} ${String(e.message).slice(0, 200)}`);
	}
}

// inFlight: run job(i) for i in [0, n) with at most k at a time
async function inFlight(n, k, job) {
	let next = 0;
	await Promise.all([...Array(k).keys()].map(async () => {
		while (next < n) {
			const i = next++;
			await guard(() => job(i));
		}
	}));
}

const t0 = process.hrtime.bigint();
let done = count;
if (workload === "create") {
	await new TableServiceClient(url.replace(/\/$/, ""), cred, opts).createTable(table);
	process.exit(0);
} else if (workload === "upsert16")
	await inFlight(count, 16, (i) => client.upsertEntity(entity(i), "Replace"));
else if (workload === "upsert1")
	await inFlight(count, 1, (i) => client.upsertEntity(entity(i), "Replace"));
else if (workload === "batch")
	await inFlight(Math.ceil(count / 100), 4, (b) => {
		const acts = [];
		for (let i = b * 100; i < Math.min(count, (b + 1) * 100); i++)
			acts.push(["create", entity(i)]);
		return client.submitTransaction(acts);
	});
else if (workload === "read") {
	done = 0;
	await guard(async () => {
		for await (const page of client.listEntities().byPage({ maxPageSize: 1000 }))
			done += page.length;
	});
	if (count && done !== count && errors++ < 3)
		console.error(`read: ${done} entities, ${count} expected`);
} else
	throw new Error(`unknown workload ${workload}`);
const secs = Number(process.hrtime.bigint() - t0) / 1e9;
console.log([workload, done, secs.toFixed(2), (done / secs).toFixed(0), errors].join(","));
