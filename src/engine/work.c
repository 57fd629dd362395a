/*
 * work.c: the scratch memory of one tide_decide() call.
 *
 * Every array a decide call needs comes from the snapshot's allocator
 * through tide_work_alloc(), which remembers the blocks with the result;
 * when the allocator can free, the next call gives the previous call's
 * result and scratch back first (tide_work_begin), so a long simulation
 * does not grow.
 */
#include <string.h>

#include "engine_int.h"
#include "work.h"

#define TIDE_MAX_BLOCKS 64

typedef struct TideBlocks
{
	int			n;
	void	   *p[TIDE_MAX_BLOCKS];
} TideBlocks;

/* Result and scratch of the previous call, given back when mem.free is set. */
typedef struct TideResultPriv
{
	TideResult	pub;
	TideBlocks	blocks;
} TideResultPriv;

static void *
remember(TideWork *w, void *p)
{
	if (w->blocks->n < TIDE_MAX_BLOCKS)
		w->blocks->p[w->blocks->n++] = p;
	return p;
}

void *
tide_work_alloc(TideWork *w, size_t size)
{
	return remember(w, tide_alloc(w->s, size));
}

/*
 * Not zeroed, for an array the caller writes before it reads: its pages
 * are touched only as far as it is used.
 */
void *
tide_work_alloc_raw(TideWork *w, size_t size)
{
	return remember(w, w->s->mem.alloc(w->s->mem.ctx, size ? size : 1));
}

/*
 * Block old (old_size bytes, from tide_work_alloc) grown to new_size: the
 * contents are kept, the rest is zeroed; the old block is given back now
 * when the allocator can free.
 */
void *
tide_work_grow(TideWork *w, void *old, size_t old_size, size_t new_size)
{
	void	   *p = tide_alloc(w->s, new_size);

	if (old)
		memcpy(p, old, old_size);
	for (int i = 0; i < w->blocks->n; i++)
		if (w->blocks->p[i] == old)
		{
			w->blocks->p[i] = p;
			if (w->s->mem.free)
				w->s->mem.free(w->s->mem.ctx, old);
			return p;
		}
	return remember(w, p);
}

/* Give block p (from tide_work_alloc) back now, when the allocator can free. */
void
tide_work_release(TideWork *w, void *p)
{
	if (!w->s->mem.free)
		return;
	for (int i = 0; i < w->blocks->n; i++)
		if (w->blocks->p[i] == p)
		{
			w->blocks->p[i] = w->blocks->p[--w->blocks->n];
			w->s->mem.free(w->s->mem.ctx, p);
			return;
		}
}

static void
release_previous(TideSnapshot *s)
{
	TideResultPriv *prev = (TideResultPriv *) s->last;

	s->last = NULL;
	if (!prev || !s->mem.free)
		return;
	for (int i = 0; i < prev->blocks.n; i++)
		s->mem.free(s->mem.ctx, prev->blocks.p[i]);
	s->mem.free(s->mem.ctx, prev);
}

/*
 * Start a decide call on s: give back the previous call's memory, zero w,
 * and give it an empty result (w->r, also s->last) that owns the blocks.
 */
void
tide_work_begin(TideWork *w, TideSnapshot *s)
{
	TideResultPriv *priv;

	release_previous(s);
	memset(w, 0, sizeof(*w));
	w->s = s;
	w->ix = s->index;
	w->nres = s->nres;
	priv = tide_alloc(s, sizeof(TideResultPriv));
	s->last = &priv->pub;
	w->blocks = &priv->blocks;
	w->r = &priv->pub;
}

/*
 * A zeroed open-addressing table with room for two slots per pending job
 * (at least 64, a power of two) of elem bytes each; *mask = slots - 1.
 */
void *
tide_work_table(TideWork *w, size_t elem, uint64_t *mask)
{
	uint64_t	cap = 64;

	while (cap < (uint64_t) w->s->njobs * 2)
		cap <<= 1;
	*mask = cap - 1;
	return tide_work_alloc(w, elem * cap);
}
