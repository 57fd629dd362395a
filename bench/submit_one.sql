-- pgbench script: one job through tide.submit (bench/submit_throughput.sh)
SELECT tide.submit('bench', 'cpu=1, gpu=1', command => 'true');
