\set p random(0, :partitions - 1)
SELECT props || jsonb_build_object('PartitionKey', pk, 'RowKey', rk, 'Timestamp', t,
		'odata.etag', 'W/"datetime''' || replace(t, ':', '%3A') || '''"')
	FROM (SELECT pk, rk, props, to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24":"MI":"SS.US"Z"') AS t
		FROM employees_base
		WHERE pk = 'tenant' || lpad(:p::text, 4, '0') AND (props->>'Age')::int > 42
		ORDER BY rk) s;
