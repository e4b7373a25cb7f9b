// test/gateway/load_test.mjs: many concurrent SDK clients against one gateway
// for a bounded time (GW_LOAD_SECONDS, default 10): upserts, point reads,
// merges with ETags, partition queries and batches, each client in its own
// partition so that every outcome is known.  Passes when no request failed
// and every client's final state is what it wrote.
import { TableClient, TableServiceClient } from "@azure/data-tables";

const port = process.env.GW_PORT;
const key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const url = `http://127.0.0.1:${port}/devstoreaccount1`;
const conn = `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${key};TableEndpoint=${url};`;
const opts = { allowInsecureConnection: true };
const clients = Number(process.env.GW_LOAD_CLIENTS || 32);
const seconds = Number(process.env.GW_LOAD_SECONDS || 10);
const table = "loadtest";

const svc = TableServiceClient.fromConnectionString(conn, opts);
await svc.createTable(table);

let requests = 0, failures = 0;
const deadline = Date.now() + seconds * 1000;

async function worker(w) {
	const t = TableClient.fromConnectionString(conn, table, opts);
	const pk = `client${w}`;
	let written = 0;
	const once = async (fn) => {
		try {
			await fn();
			requests++;
		} catch (e) {
			failures++;
			if (failures <= 5) console.log(`client ${w}: ${e.statusCode} ${e.message.slice(0, 300)}`);
		}
	};
	while (Date.now() < deadline) {
		const rk = String(written).padStart(6, "0");
		await once(() => t.upsertEntity({ partitionKey: pk, rowKey: rk, n: written, v: 0 }, "Replace"));
		await once(async () => {
			const e = await t.getEntity(pk, rk);
			if (e.n !== written) throw new Error(`read ${e.n}, wrote ${written}`);
			await t.updateEntity({ partitionKey: pk, rowKey: rk, v: 1 }, "Merge", { etag: e.etag });
		});
		written++;
		if (written % 10 === 0) {
			await once(async () => {
				let n = 0;
				for await (const page of t.listEntities({ queryOptions: { filter: `PartitionKey eq '${pk}' and RowKey lt 'b'` } }).byPage({ maxPageSize: 50 }))
					n += page.length;
				if (n !== written) throw new Error(`query saw ${n}, expected ${written}`);
			});
			await once(() => t.submitTransaction(
				[...Array(10).keys()].map((i) => ["upsert", { partitionKey: pk, rowKey: `b${i}`, round: written }, "Replace"])));
		}
	}
	// the final state is what this client wrote
	await once(async () => {
		let n = 0, v1 = 0, batchRound = -1;
		for await (const e of t.listEntities({ queryOptions: { filter: `PartitionKey eq '${pk}'` } })) {
			if (e.rowKey.startsWith("b")) {
				batchRound = Math.max(batchRound, e.round);
				continue;
			}
			n++;
			if (e.v === 1) v1++;
		}
		if (n !== written || v1 !== written)
			throw new Error(`final: ${n} entities, ${v1} merged, ${written} written`);
	});
}

const started = Date.now();
await Promise.all([...Array(clients).keys()].map(worker));
const secs = (Date.now() - started) / 1000;
await svc.deleteTable(table);
console.log(`${clients} clients, ${secs.toFixed(1)} s: ${requests} requests (${(requests / secs).toFixed(0)}/s), ${failures} failed`);
process.exit(failures ? 1 : 0);
