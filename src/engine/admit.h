/*
 * admit.h: may the queue hold the job (R-A1), can it ever (R-A2), admit.c.
 */
#ifndef TIDE_ADMIT_H
#define TIDE_ADMIT_H

#include "engine_int.h"

extern int	tide_admit(TideWork *w, int j, TideOutcome *o);
extern bool tide_admit_idle(TideWork *w, int j, TideOutcome *o);
extern bool tide_static_check(TideWork *w, int j, TideOutcome *o);

#endif							/* TIDE_ADMIT_H */
