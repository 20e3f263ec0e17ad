-- TTFT p50 and p99 per stage straight from the raw shards (nearest rank, as in stages.parquet):
-- TTFT = t(first content event) - sent_ns, t = rx_kernel_ns when present else rx_user_ns.
-- Usage: duckdb -c "SET VARIABLE run = 'runs/smoke'; .read examples/duckdb/ttft_p99_by_stage.sql"
WITH req AS (
  SELECT * FROM read_parquet(getvariable('run') || '/raw/requests-*.parquet')
  WHERE NOT warmup AND status = 200 AND error_kind = '' AND done_ns IS NOT NULL
), first AS (
  SELECT seq, min(coalesce(rx_kernel_ns, rx_user_ns)) AS t_first
  FROM read_parquet(getvariable('run') || '/raw/chunks-*.parquet')
  WHERE kind = 'content'
  GROUP BY seq
), ttft AS (
  SELECT req.stage, first.t_first - req.sent_ns AS ttft_ns FROM req JOIN first USING (seq)
)
SELECT stage,
       count(*) AS n,
       list_sort(list(ttft_ns))[greatest(1, ceil(0.50 * count(*))::BIGINT)] AS ttft_p50_ns,
       list_sort(list(ttft_ns))[greatest(1, ceil(0.99 * count(*))::BIGINT)] AS ttft_p99_ns
FROM ttft GROUP BY stage ORDER BY stage;
