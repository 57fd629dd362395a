-- pgbench script: :batch jobs in one tide.submit_many call (bench/submit_throughput.sh)
SELECT cardinality(tide.submit_many('bench', array_fill('cpu=1, gpu=1'::tide.resvec, ARRAY[:batch]),
                                    commands => array_fill('true'::text, ARRAY[:batch])));
