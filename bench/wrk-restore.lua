-- wrk script for the simulator's throughput: POSTs one restore with the key in WRK_KEY, or the
-- simulator's default key.
--   wrk -t1 -c256 -d10s -s bench/wrk-restore.lua http://127.0.0.1:PORT/v2/purchases/apple-store/restore
wrk.method = "POST"
wrk.body = '{"profileId": "wrk-profile", "originalTransactionId": "2000000261699248"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = os.getenv("WRK_KEY") or "sim_secret_key"
