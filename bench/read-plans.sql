-- The statements status, runs, the metrics file and a run's start and end prepare, as query plans:
-- bench/scale.sh prints them for its 10M journal (run ids and times here are placeholders).
.print '-- status: counts by status'
EXPLAIN QUERY PLAN SELECT status, code, sum(rows) FROM run_counts GROUP BY status, code HAVING sum(rows) != 0;
.print '-- status and the page: rejections by reason (kept as they are recorded)'
EXPLAIN QUERY PLAN SELECT reason, rows AS n FROM rejection_counts WHERE rows != 0 ORDER BY n DESC, reason;
.print '-- runs: attempts by run'
EXPLAIN QUERY PLAN SELECT run_id, outcome, sum(attempts) FROM run_attempts GROUP BY run_id, outcome;
.print '-- status: the latest run activity'
EXPLAIN QUERY PLAN SELECT outcome, sum(attempts), min(first_at), max(last_at) FROM run_attempts WHERE run_id = 3 GROUP BY outcome;
.print '-- status: recent requests'
EXPLAIN QUERY PLAN SELECT (SELECT requests FROM run_samples WHERE run_id = 3 ORDER BY at DESC LIMIT 1) - coalesce((SELECT requests FROM run_samples WHERE run_id = 3 AND at <= 0 ORDER BY at DESC LIMIT 1), 0);
.print '-- metrics file and end of a run: owed rows, the run counts'
EXPLAIN QUERY PLAN SELECT coalesce(sum(rows), 0) FROM run_counts WHERE status IN (0, 1);
EXPLAIN QUERY PLAN SELECT status, code, rows FROM run_counts WHERE run_id = 3 AND rows != 0 ORDER BY status, code;
EXPLAIN QUERY PLAN SELECT outcome, http_status, attempts FROM run_attempts WHERE run_id = (SELECT max(id) FROM runs);
.print '-- row counts of the tables these read'
SELECT 'run_counts', count(*) FROM run_counts UNION ALL SELECT 'run_attempts', count(*) FROM run_attempts UNION ALL SELECT 'run_samples', count(*) FROM run_samples;
.print '-- the start of every run: rows a killed run left in flight'
EXPLAIN QUERY PLAN UPDATE items SET status = 0 WHERE status = 1 AND last_run IN (SELECT run_id FROM run_counts WHERE status = 1 AND rows > 0);
