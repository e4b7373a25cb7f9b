-- Every error that echoes a caller's value clips it to 100 bytes, whole
-- characters, marked "..." (README "Errors").  The filter parser's echoes
-- cut a Guid or DateTime literal at about 233 characters (its message
-- buffer) and other tokens at 40 bytes, unmarked and possibly in the middle
-- of a character.
\set VERBOSITY terse
SELECT tablestore.create_table('Echoes');
CREATE FUNCTION pg_temp.echo(filter text) RETURNS TABLE (bytes int, message text)
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM tablestore.query_entities_json('Echoes', filter);
	RETURN QUERY SELECT 0, 'no error';
EXCEPTION WHEN OTHERS THEN
	RETURN QUERY SELECT octet_length(SQLERRM), SQLERRM;
END $$;
-- each literal and token the parser echoes: 300 bytes of it, and the
-- message is the same for any longer one
SELECT * FROM pg_temp.echo('D eq guid''' || repeat('9', 300) || '''');
SELECT * FROM pg_temp.echo('D eq datetime''' || repeat('9', 300) || '''');
SELECT * FROM pg_temp.echo('D eq datetime''1500-01-01T00:00:00.000000000' || repeat('0', 300) || '''');
SELECT * FROM pg_temp.echo('D eq ' || repeat('7', 300));
SELECT * FROM pg_temp.echo('D eq ' || repeat('x', 300) || '''abc''');
SELECT * FROM pg_temp.echo(repeat('f', 300) || '(D)');
SELECT * FROM pg_temp.echo('D ' || repeat('q', 300) || ' 1');
SELECT * FROM pg_temp.echo('(D eq 1 ' || repeat('q', 300));
SELECT * FROM pg_temp.echo('D eq 1 ' || repeat('q', 300));
SELECT * FROM pg_temp.echo('1 ' || repeat('q', 300));
-- exactly 100 bytes are echoed whole; a character that the 100th byte
-- splits is left out whole (é is two bytes, 😀 four)
SELECT * FROM pg_temp.echo('D eq guid''' || repeat('9', 100) || '''');
SELECT * FROM pg_temp.echo('D eq guid''' || repeat('9', 99) || 'é' || '''');
SELECT * FROM pg_temp.echo('D eq guid''' || repeat('9', 98) || '😀' || repeat('9', 10) || '''');
SELECT * FROM pg_temp.echo('D ' || repeat('é', 60) || ' 1');
SELECT max(bytes) AS longest FROM generate_series(90, 330) n,
	LATERAL (SELECT * FROM pg_temp.echo('D eq guid''' || repeat('é', n) || '''')
	UNION ALL SELECT * FROM pg_temp.echo('D eq datetime''' || repeat('😀', n) || '''')
	UNION ALL SELECT * FROM pg_temp.echo('D ' || repeat('😀', n) || ' 1')) e;
-- the key index's own messages echo keys clipped too: a duplicate of two
-- 500-character keys written with plain SQL, and one found by CREATE INDEX
INSERT INTO tablestore_data.echoes VALUES (repeat('p', 500), repeat('r', 500), now(), '{}');
INSERT INTO tablestore_data.echoes VALUES (repeat('p', 500), repeat('r', 500), now(), '{}');
CREATE TABLE public.echo_dups (pk tablestore.key, rk tablestore.key);
INSERT INTO public.echo_dups SELECT repeat('p', 500), repeat('é', 500) FROM generate_series(1, 2);
\set VERBOSITY default
CREATE UNIQUE INDEX ON public.echo_dups USING tskey (pk, rk);
\set VERBOSITY terse
DROP TABLE public.echo_dups;
SELECT tablestore.delete_table('Echoes');
