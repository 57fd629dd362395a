/*
 * snapshot_int.h: what the engine's files call in snapshot.c besides the
 * API of engine.h: charging nodes and queues, the node index's buckets,
 * label names.
 */
#ifndef TIDE_SNAPSHOT_INT_H
#define TIDE_SNAPSHOT_INT_H

#include "engine.h"

struct TidePart;

extern void tide_node_reindex(TideSnapshot *s, TideNode *n);
extern void tide_node_apply(TideSnapshot *s, TideNode *n, const int64_t *res,
							uint64_t gpus, int gpu_milli, int sign);
extern void tide_queue_apply(TideSnapshot *s, TideQueue *q, const TideNode *n,
							 bool idle, int owner, const int64_t *res, int sign);
extern int	tide_bucket_of(const TideSnapshot *s, const TideNode *n, const struct TidePart *p);
extern int	tide_bitlen(int64_t v);
extern const char *tide_label_name(const TideSnapshot *s, int id);

#endif							/* TIDE_SNAPSHOT_INT_H */
