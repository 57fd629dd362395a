/*
 * evict_tree.h: evictions in a queue tree (R-E7), evict_tree.c.
 */
#ifndef TIDE_EVICT_TREE_H
#define TIDE_EVICT_TREE_H

#include "evict_int.h"

extern int	tide_evict_tree_rule(const TideWork *w, const TideJob *p, bool e1, bool e2, const Victim *v);
extern bool tide_evict_tree_back(const TideWork *w, const Victim *v, int j);
extern int	tide_evict_tree_pass(const TideWork *w, int j, const Victim *v);
extern const int32_t *tide_evict_tree_order(TideWork *w, int j);
extern bool tide_evict_tree_order_made(const TideWork *w, int j);

#endif							/* TIDE_EVICT_TREE_H */
