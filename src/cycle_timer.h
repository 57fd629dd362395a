/*
 * cycle_timer.h: the clocks tide.run_cycle() times its phases with (the
 * load, decide and write times of tide.cycles, and the debug timings).
 * Inline only: no cycle_timer.c.
 */
#ifndef TIDE_CYCLE_TIMER_H
#define TIDE_CYCLE_TIMER_H

#include <time.h>

#include "portability/instr_time.h"

/* Milliseconds since start (the phase timings of tide.cycles). */
static inline double
cycle_elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/*
 * This thread's CPU milliseconds: the debug timings give it beside the
 * wall time, which a busy machine stretches.
 */
static inline double
cycle_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

#endif							/* TIDE_CYCLE_TIMER_H */
