/*
 * report.h: what the database must still hear, read from the allocation
 * table (tide.started owed; tide.exited or tide.evicted once a process
 * ended), sent in batches through db.c; an allocation whose final report
 * is accepted leaves the table and the state directory.
 */
#ifndef TIDE_LAUNCHER_REPORT_H
#define TIDE_LAUNCHER_REPORT_H

#include "util.h"

bool		report_flush(bool force);
double		report_due(void);

#endif							/* TIDE_LAUNCHER_REPORT_H */
