/*
 * gpus.c: which GPUs of a node a replica gets (R-L6, seeds 001 and 003).
 *
 * Whole GPUs: inside one topology domain when one has room, choosing the
 * domain with the fewest free GPUs that still fits (so the largest free
 * domains stay whole); otherwise from as few domains as possible: the
 * largest free domains first, the remainder from the best-fitting domain.
 * Lowest GPU indexes inside a domain; ties between domains by domain id.
 *
 * Fractions: one GPU's remaining share, never two part-GPUs added together
 * (Ray's rule); a GPU that is already shared first, the one with the least
 * share left that still fits; else a free GPU from the domain with the
 * fewest free GPUs, so free domains stay whole.
 */
#include "engine_int.h"

/* The k lowest set bits of m. */
static uint64_t
lowest_bits(uint64_t m, int k)
{
	uint64_t	out = 0;

	while (k-- > 0 && m)
	{
		uint64_t	b = m & (~m + 1);

		out |= b;
		m &= m - 1;
	}
	return out;
}

/*
 * Choose k GPUs among avail (a mask of free GPUs) on node n; returns 0 when
 * fewer than k are available.
 */
uint64_t
tide_choose_whole_gpus(const TideNode *n, uint64_t avail, int k)
{
	int			best = -1,
				bestfree = TIDE_MAX_GPUS + 1;
	uint64_t	out = 0;
	uint64_t	left;
	int			need = k;

	if (k <= 0)
		return 0;
	if (__builtin_popcountll(avail) < k)
		return 0;
	if (n->ndomains <= 1)
		return lowest_bits(avail, k);

	/* one domain that fits, fewest free first */
	for (int d = 0; d < n->ndomains; d++)
	{
		int			f = __builtin_popcountll(avail & n->domain_mask[d]);

		if (f >= k && f < bestfree)
		{
			best = d;
			bestfree = f;
		}
	}
	if (best >= 0)
		return lowest_bits(avail & n->domain_mask[best], k);

	/* span: largest domains first until the rest fits in one domain */
	left = avail;
	while (need > 0)
	{
		int			fit = -1,
					fitfree = TIDE_MAX_GPUS + 1,
					big = -1,
					bigfree = 0;

		for (int d = 0; d < n->ndomains; d++)
		{
			int			f = __builtin_popcountll(left & n->domain_mask[d]);

			if (f >= need && f < fitfree)
			{
				fit = d;
				fitfree = f;
			}
			if (f > bigfree)
			{
				big = d;
				bigfree = f;
			}
		}
		if (fit >= 0)
		{
			out |= lowest_bits(left & n->domain_mask[fit], need);
			need = 0;
		}
		else if (big >= 0)
		{
			uint64_t	take = left & n->domain_mask[big];

			out |= take;
			left &= ~take;
			need -= bigfree;
		}
		else
			return 0;			/* GPUs outside any domain: cannot happen */
	}
	return out;
}

/*
 * Choose the GPU for a fractional request of milli (< 1000) given each GPU's
 * available share; returns the GPU index or -1.
 */
int
tide_choose_fraction_gpu(const TideNode *n, const int16_t *avail_milli, int milli)
{
	int			best = -1,
				bestleft = TIDE_MILLI + 1;
	int			bestdom = TIDE_MAX_GPUS + 1;

	/* a shared GPU first: least share left that still fits */
	for (int g = 0; g < n->ngpus; g++)
	{
		int			a = avail_milli[g];

		if (a >= milli && a < TIDE_MILLI && n->gpu_free[g] < TIDE_MILLI && a < bestleft)
		{
			best = g;
			bestleft = a;
		}
	}
	if (best >= 0)
		return best;
	/* else a free GPU from the domain with the fewest free GPUs */
	for (int g = 0; g < n->ngpus; g++)
	{
		int			f;
		int			d = 0;

		if (avail_milli[g] < milli)
			continue;
		while (d < n->ndomains && !((n->domain_mask[d] >> g) & 1))
			d++;
		f = 0;
		for (int h = 0; h < n->ngpus; h++)
			if (((n->domain_mask[d] >> h) & 1) && avail_milli[h] >= TIDE_MILLI)
				f++;
		if (f < bestdom)
		{
			best = g;
			bestdom = f;
		}
	}
	return best;
}
