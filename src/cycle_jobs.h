/*
 * cycle_jobs.h: the pending jobs of the load with their tasks
 * (cycle_jobs.c), called by cycle_load.c.
 */
#ifndef TIDE_CYCLE_JOBS_H
#define TIDE_CYCLE_JOBS_H

#include "cycle_loader.h"

/*
 * The pending jobs and their roles into the snapshot, once its names,
 * nodes and queues are in.
 */
extern void cycle_load_jobs(Loader *ld);

#endif							/* TIDE_CYCLE_JOBS_H */
