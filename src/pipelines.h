/*
 * pipelines.h: what the scheduling cycle does for waiting jobs
 * (pipelines.c, extension/32_pipelines.sql).
 */
#ifndef TIDE_PIPELINES_H
#define TIDE_PIPELINES_H

/*
 * The cycle's "due now" step (R-P3): deferred jobs whose begin_at has
 * passed stop waiting.  A cycle that woke any is not quiet, and neither is
 * the next cycle of any other scope (the change counter is bumped).
 * Inside SPI; returns how many it woke.
 */
extern int	tide_cycle_wake_due(void);

#endif
