-- Output tokens per second per stage over the stage window (first planned send to last
-- completion), from the raw shards; matches stages.parquet output_tps when the server sends usage.
-- Usage: duckdb -c "SET VARIABLE run = 'runs/smoke'; .read examples/duckdb/tokens_per_second.sql"
WITH m AS (SELECT * FROM read_json_auto(getvariable('run') || '/manifest.json')),
st AS (SELECT unnest(stages) AS s, start_ns FROM m),
req AS (
  SELECT stage, sent_ns, done_ns, usage_completion_tokens AS n,
         status = 200 AND error_kind = '' AND done_ns IS NOT NULL AS ok
  FROM read_parquet(getvariable('run') || '/raw/requests-*.parquet') WHERE NOT warmup
)
SELECT req.stage,
       sum(n) FILTER (WHERE ok) AS output_tokens,
       sum(n) FILTER (WHERE ok) / ((max(coalesce(done_ns, sent_ns)) - least(min(sent_ns), any_value(st.start_ns + st.s.offset_ns))) / 1e9) AS output_tps
FROM req JOIN st ON st.s.index = req.stage
GROUP BY req.stage ORDER BY req.stage;
