/*
 * work.h: the scratch memory of one tide_decide() call (work.c).  Blocks
 * come from the snapshot's allocator and are given back with the result.
 */
#ifndef TIDE_WORK_H
#define TIDE_WORK_H

#include "engine.h"

typedef struct TideWork TideWork;

extern void tide_work_begin(TideWork *w, TideSnapshot *s);
extern void *tide_work_alloc(TideWork *w, size_t size);
extern void *tide_work_alloc_raw(TideWork *w, size_t size);
extern void *tide_work_table(TideWork *w, size_t elem, uint64_t *mask);
extern void tide_work_release(TideWork *w, void *p);
extern void *tide_work_grow(TideWork *w, void *old, size_t old_size, size_t new_size);

#endif							/* TIDE_WORK_H */
