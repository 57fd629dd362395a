/*
 * main.c: tide-sim, replays real traces through the pg_tide policy engine
 * (the same C code tide.run_cycle() uses) for quality and speed studies.
 * See docs/sim.md.
 */
#include <stdio.h>
#include <string.h>

#include "sim.h"

static void
usage(FILE *out)
{
	fprintf(out,
			"tide-sim replays GPU cluster traces through the pg_tide policy engine.\n"
			"\n"
			"Usage:\n"
			"  tide-sim openb --nodes FILE --pods FILE [--seed N] [--max-arrival R]\n"
			"                 [--policy NAME]\n"
			"      The FGD paper's experiment (Alibaba openb trace): pods arrive one at a\n"
			"      time in a seeded random order, resampled until the requested GPUs reach\n"
			"      R x the cluster's GPUs (default 1.3); each is placed or fails; nothing\n"
			"      leaves.  Prints CSV: arrived_pct,allocated_pct,fragmented_pct, one row\n"
			"      per whole percent of arrival.  --seed defaults to 1.\n"
			"  tide-sim philly --jobs FILE --gpus-per-node N --nodes M [--policy NAME]\n"
			"                 [--queue fifo|backfill|easy] [--limit-factor F]\n"
			"                 [--cluster ID] [--limit K] [--waits FILE]\n"
			"                 [--half-life SECONDS] [--queues FILE [--fair FILE]]\n"
			"      Replays the Philly trace in simulated time (arrivals and departures)\n"
			"      on M nodes of N GPUs; prints a summary: jobs, waits, completion time,\n"
			"      GPU utilisation.  --cluster keeps one virtual cluster's jobs, --limit\n"
			"      the first K jobs by arrival.  --queue: strict fifo, backfill (default)\n"
			"      or easy (the oldest job reserves; the others backfill if they end\n"
			"      before it could start; time limit = duration x F, default 1).\n"
			"      --waits writes every completed job's wait (s), sorted.\n"
			"      --half-life keeps the queue's usage decayed with that half-life, as\n"
			"      tide.fair_share_half_life does (0: the usage now), and prints it.\n"
			"      --queues FILE (CSV name,parent,quota_gpus) makes a queue per line, a\n"
			"      tree by parent, each job in the leaf its cluster names; the summary\n"
			"      adds Jain's fairness index per day and each queue's waits.  --fair\n"
			"      writes per day and queue the GPU-seconds received and waited.\n"
			"      --forecast: at each arrival, the engine's forecast (tide_forecast) of\n"
			"      the new jobs, time limits = duration x F; the summary adds its error\n"
			"      against the real starts.  --forecast-from D --forecast-days N: only\n"
			"      the arrivals of those days; --forecasts FILE writes one row per job.\n"
			"  tide-sim tidal --jobs FILE --gpus-per-node N --nodes M [--from-day D]\n"
			"                 [--days N] [--inference-peak F] [--inference-trough F]\n"
			"                 [--service-hours H] [--seed S] [--restart-cost SECONDS]\n"
			"                 [--min-runtime SECONDS] [--evictions FILE]\n"
			"                 [--legacy-order] [--services FILE] [--policy NAME]\n"
			"      Seed 002's tidal scenario: the trace's jobs of days D to D+N (default\n"
			"      20, 14) as preemptable training, inference services arriving daily\n"
			"      (peak F x the cluster's GPUs, default 0.5) that evict training (R-E2).\n"
			"      Prints the training GPU-hours thrown away per GPU-hour reclaimed and\n"
			"      the services' waits; --legacy-order: R-E4's old victim order.\n"
			"      --services FILE (CSV arrival_s,duration,num_gpus) gives the services;\n"
			"      --evictions FILE writes one row per eviction.\n"
			"\n"
			"Options:\n"
			"  --policy NAME   node order (R-L5): frag (default), pack or spread; openb also\n"
			"                  takes fgd (the simulator's reference FGD scorer, docs/sim.md)\n"
			"  --help          this text\n"
			"\n"
			"Exit status: 0 ok, 1 bad input file, 2 bad usage.\n");
}

int
main(int argc, char **argv)
{
	if (argc < 2)
	{
		usage(stderr);
		return SIM_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
		strcmp(argv[1], "help") == 0)
	{
		usage(stdout);
		return 0;
	}
	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
		{
			usage(stdout);
			return 0;
		}
	if (strcmp(argv[1], "openb") == 0)
		return openb_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "philly") == 0)
		return philly_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "tidal") == 0)
		return tidal_main(argc - 1, argv + 1);
	sim_die(SIM_EXIT_USAGE, "unknown command \"%s\" (known: openb, philly, tidal; see --help)", argv[1]);
}
