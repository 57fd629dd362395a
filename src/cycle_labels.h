/*
 * cycle_labels.h: labels read from jsonb into the snapshot (cycle_labels.c),
 * by the load (nodes' labels, jobs' node selectors) and the workload shapes
 * (their node selectors).
 */
#ifndef TIDE_CYCLE_LABELS_H
#define TIDE_CYCLE_LABELS_H

#include "postgres.h"

#include "engine.h"

/*
 * Sorted label ids (tide_label_intern) of a jsonb object as the load
 * selects a node's labels or a job's or shape's node selector: each key
 * with its value's text as jsonb_each_text() gives it (null values are no
 * label), interned in key order (the database's collation); *n gets their
 * count; NULL for an empty object.  Allocated in mcxt.
 */
extern int32 *cycle_label_ids(TideSnapshot *s, MemoryContext mcxt, Datum selector, int32 *n);

#endif							/* TIDE_CYCLE_LABELS_H */
