// bench/gateway_load.mjs: the load generator of bench/gateway.sh, the same for
// tablestore-gateway and Azurite.  Plain node:http with keep-alive and Shared
// Key Lite signing (node:crypto), so that the client costs as little as it
// can (an SDK would cost more than the server).  Prints one CSV line:
//   op,clients,seconds,ops,ops_per_s,mean_ms,p50_ms,p99_ms,errors
// Usage: node gateway_load.mjs URL TABLE OP CLIENTS SECONDS [PARTITIONS ROWS]
//   URL  http://127.0.0.1:PORT/devstoreaccount1
//   OP   load (PARTITIONS x ROWS entities by batches), point, insert, query
//        (one page of 100 from a partition), batch (100 inserts)
import http from "node:http";
import crypto from "node:crypto";

const [url, table, op, clientsArg, secondsArg, partsArg, rowsArg] = process.argv.slice(2);
const clients = Number(clientsArg), seconds = Number(secondsArg);
const parts = Number(partsArg || 20), rows = Number(rowsArg || 1000);
const key = Buffer.from("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==", "base64");
const u = new URL(url);
const account = u.pathname.split("/")[1];
const agent = new http.Agent({ keepAlive: true, maxSockets: clients });

function request(method, path, headers, body) {
	const date = new Date().toUTCString();
	const canon = `/${account}/${account}${path.split("?")[0]}`;
	const sig = crypto.createHmac("sha256", key).update(`${date}\n${canon}`).digest("base64");
	const h = {
		"x-ms-date": date, "x-ms-version": "2019-02-02", "DataServiceVersion": "3.0",
		"Accept": "application/json;odata=minimalmetadata",
		"Authorization": `SharedKeyLite ${account}:${sig}`, ...headers,
	};
	if (body !== undefined) h["Content-Length"] = Buffer.byteLength(body);
	return new Promise((resolve, reject) => {
		const req = http.request({ host: u.hostname, port: u.port, path: `/${account}${path}`, method, headers: h, agent }, (res) => {
			const chunks = [];
			res.on("data", (c) => chunks.push(c));
			res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
		});
		req.on("error", reject);
		if (body !== undefined) req.write(body);
		req.end();
	});
}

const pad = (n, w) => String(n).padStart(w, "0");
const entity = (pk, rk, i) => ({ PartitionKey: pk, RowKey: rk, FirstName: `Name${i}`, LastName: "Smith", Age: 18 + (i % 50), Email: `user${i}@example.com`, Active: true, Score: 1.5 * i });

function batchBody(pk, n, first) {
	const b = `batch_${crypto.randomUUID()}`, cs = `changeset_${crypto.randomUUID()}`;
	let s = `--${b}\r\nContent-Type: multipart/mixed; boundary=${cs}\r\n\r\n`;
	for (let i = 0; i < n; i++) {
		s += `--${cs}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n` +
			`POST ${url}/${table} HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json;odata=minimalmetadata\r\nPrefer: return-no-content\r\nDataServiceVersion: 3.0\r\n\r\n` +
			JSON.stringify(entity(pk, pad(first + i, 5), first + i)) + "\r\n";
	}
	return { body: s + `--${cs}--\r\n--${b}--\r\n`, ctype: `multipart/mixed; boundary=${b}` };
}

async function batch(pk, n, first) {
	const { body, ctype } = batchBody(pk, n, first);
	const r = await request("POST", "/$batch", { "Content-Type": ctype }, body);
	if (r.status !== 202 || /HTTP\/1.1 [45]/.test(r.body)) throw new Error(`batch: ${r.status} ${r.body.slice(0, 300)}`);
}

if (op === "load") {
	await request("POST", "/Tables", { "Content-Type": "application/json" }, JSON.stringify({ TableName: table }));
	const jobs = [];
	for (let p = 0; p < parts; p++)
		for (let f = 0; f < rows; f += 100) jobs.push([`p${pad(p, 3)}`, f]);
	await Promise.all([...Array(clients).keys()].map(async () => {
		while (jobs.length) {
			const [pk, f] = jobs.pop();
			await batch(pk, Math.min(100, rows - f), f);
		}
	}));
	process.exit(0);
}

const lat = [];
let errors = 0, ops = 0;
const end = Date.now() + seconds * 1000;
async function worker(w) {
	let n = 0;
	const tag = crypto.randomUUID().slice(0, 8);
	while (Date.now() < end) {
		const t0 = process.hrtime.bigint();
		let ok = true;
		try {
			if (op === "point") {
				const r = await request("GET", `/${table}(PartitionKey='p${pad(Math.floor(Math.random() * parts), 3)}',RowKey='${pad(Math.floor(Math.random() * rows), 5)}')`, {});
				ok = r.status === 200;
			} else if (op === "insert") {
				const r = await request("POST", `/${table}`, { "Content-Type": "application/json", "Prefer": "return-no-content" },
					JSON.stringify(entity(`ins${w}${tag}`, pad(n, 9), n)));
				ok = r.status === 204;
			} else if (op === "query") {
				const f = encodeURIComponent(`PartitionKey eq 'p${pad(Math.floor(Math.random() * parts), 3)}'`);
				const r = await request("GET", `/${table}()?$filter=${f}&$top=100`, {});
				ok = r.status === 200 && r.body.length > 1000;
			} else if (op === "batch") {
				await batch(`b${w}${tag}${n}`, 100, 0);
			} else throw new Error(`unknown op ${op}`);
		} catch (e) {
			ok = false;
			if (errors < 3) console.error(String(e).slice(0, 300));
		}
		n++;
		if (ok) {
			ops++;
			lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
		} else errors++;
	}
}
const t0 = Date.now();
await Promise.all([...Array(clients).keys()].map(worker));
const secs = (Date.now() - t0) / 1000;
lat.sort((a, b) => a - b);
const q = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] : 0);
const mean = lat.reduce((a, b) => a + b, 0) / (lat.length || 1);
console.log([op, clients, secs.toFixed(1), ops, (ops / secs).toFixed(0), mean.toFixed(3), q(0.5).toFixed(3), q(0.99).toFixed(3), errors].join(","));
agent.destroy();
