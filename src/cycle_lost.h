/*
 * cycle_lost.h: nodes whose launcher went silent (R-C3), marked down by
 * tide.run_cycle() before it loads, or listed by tide.dry_run()
 * (cycle_lost.c).
 */
#ifndef TIDE_CYCLE_LOST_H
#define TIDE_CYCLE_LOST_H

/*
 * Mark down the nodes whose launcher went silent for longer than
 * tide.node_timeout (a write: before the load, so that it sees them down);
 * returns the jobs hit.
 */
extern int	tide_cycle_nodes_lost(void);

/*
 * The nodes tide_cycle_nodes_lost() would mark down now, and why, without
 * writing (for tide.dry_run()); returns how many.
 */
extern int	tide_cycle_nodes_to_lose(char ***names, char ***reasons);

#endif							/* TIDE_CYCLE_LOST_H */
