/*
 * cycle_loader.c: what both halves of the load use (cycle_load.c, the
 * cluster's rows; cycle_jobs.c, the pending jobs): the lookups of a node
 * or queue by name, the names only jobs use (R-A2), request vectors and
 * service types read into the snapshot's terms (see cycle_loader.h).
 */
#include "postgres.h"

#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "cycle_loader.h"
#include "resvec.h"

/* Index of the name of len bytes at key (no NUL needed) in the map, or -1. */
int
loader_name_index_len(const NameMap *m, const char *key, int len)
{
	int			lo = 0,
				hi = m->n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		int			cmp = strncmp(m->names[mid], key, len);

		if (cmp == 0 && m->names[mid][len] != '\0')
			cmp = 1;			/* key is a prefix of the name */
		if (cmp == 0)
			return mid;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/*
 * Names only jobs use (R-A2).  The snapshot's name table holds what nodes,
 * queues and live allocations name; a job that asks for any other resource
 * or card type can never fit, so it is marked unschedulable with that name
 * instead of adding it to the table: one tenant's made-up names can never
 * fill the table every other job's placement needs.  reason: the pending
 * reason's text, one per name.  Returns 1 + the id.
 */
#define UNKNOWN_KEY_LEN 320		/* a reason with a card type of up to 255 bytes */

typedef struct UnknownEntry
{
	char		key[UNKNOWN_KEY_LEN];
	int32		id;
} UnknownEntry;

int32
loader_unknown_name(Loader *ld, const char *reason)
{
	char		key[UNKNOWN_KEY_LEN];
	UnknownEntry *e;
	bool		found;

	if (ld->unknown == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = UNKNOWN_KEY_LEN;
		ctl.entrysize = sizeof(UnknownEntry);
		ctl.hcxt = ld->l->mcxt;
		ld->unknown = hash_create("tide unknown names", 64, &ctl,
								  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	strlcpy(key, reason, sizeof(key));
	e = hash_search(ld->unknown, key, HASH_ENTER, &found);
	if (!found)
	{
		if (ld->nunknown == ld->unknown_cap)
		{
			ld->unknown_cap = ld->unknown_cap == 0 ? 64 : ld->unknown_cap * 2;
			ld->unknown_names = ld->nunknown == 0
				? MemoryContextAlloc(ld->l->mcxt, sizeof(char *) * ld->unknown_cap)
				: repalloc(ld->unknown_names, sizeof(char *) * ld->unknown_cap);
		}
		ld->unknown_names[ld->nunknown] = MemoryContextStrdup(ld->l->mcxt, key);
		e->id = ld->nunknown++;
	}
	return e->id + 1;
}

/*
 * Fill v (nres, zeroed) from a resvec: its quantities in milli.  Returns
 * the first name the snapshot does not know, or NULL.
 */
const char *
loader_resvec_to_vec(TideSnapshot *s, Datum d, int64 *v)
{
	ResVec	   *rv = DatumGetResVecP(d);
	const char *missing = NULL;

	for (int k = 0; k < resvec_count(rv); k++)
	{
		int			r = tide_res_lookup(s, resvec_name(rv, k));

		if (r >= 0)
			v[r] = resvec_milli(rv, k);
		else if (missing == NULL)
			missing = resvec_name(rv, k);
	}
	return missing;
}

/* The engine's service type of a tide.jobs/queues service_type text (len bytes). */
int
loader_service_of_len(const char *s, int len)
{
	if (s && len == 9 && memcmp(s, "inference", 9) == 0)
		return TIDE_SVC_INFERENCE;
	if (s && len == 8 && memcmp(s, "training", 8) == 0)
		return TIDE_SVC_TRAINING;
	return TIDE_SVC_UNKNOWN;
}
