/*
 * cycle_loader.c: what both halves of the load use (cycle_load.c, the
 * cluster's rows; cycle_jobs.c, the pending jobs): the lookups of a node
 * or queue by name, the names only jobs use (R-A2), request vectors and
 * service types read into the snapshot's terms (see cycle_loader.h).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "cycle_loader.h"
#include "hash.h"
#include "cycle_recv.h"
#include "resvec.h"

/* A name looked up in a NameMap or an InternTable, and the names it is looked for among. */
typedef struct NameKey
{
	const char *const *names;
	const char *key;
	int			len;
} NameKey;

#define ARENA_BLOCK (64 * 1024)

void *
loader_arena_take(LoaderArena *a, Size len)
{
	char	   *p;

	if (a->left < MAXALIGN(len))
	{
		a->left = Max(a->block, MAXALIGN(len));
		a->next = MemoryContextAllocHuge(a->cxt, a->left);
	}
	p = a->next;
	a->next += MAXALIGN(len);
	a->left -= MAXALIGN(len);
	a->used += MAXALIGN(len);
	return p;
}

Datum
loader_arena_datum(LoaderArena *a, Datum d)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(d);
	char	   *p;

	if (VARATT_IS_EXTENDED(v) && !VARATT_IS_SHORT(v))
		v = PG_DETOAST_DATUM(d);	/* compressed or out of line */
	p = loader_arena_take(a, VARSIZE_ANY(v));
	memcpy(p, v, VARSIZE_ANY(v));
	return PointerGetDatum(p);
}

/* The load's own arena, in the snapshot's memory. */
static LoaderArena *
load_arena(Loader *ld)
{
	if (ld->arena.cxt == NULL)
	{
		ld->arena.cxt = ld->l->mcxt;
		ld->arena.block = ARENA_BLOCK;
	}
	return &ld->arena;
}

void *
loader_arena_alloc(Loader *ld, Size len)
{
	return loader_arena_take(load_arena(ld), len);
}

Datum
loader_arena_copy(Loader *ld, Datum d)
{
	return loader_arena_datum(load_arena(ld), d);
}

/* Is names[entry] the len bytes at key?  (a TideTableSame) */
static bool
name_same(const void *ctx, int32 entry)
{
	const NameKey *k = ctx;
	const char *x = k->names[entry];

	return strncmp(x, k->key, k->len) == 0 && x[k->len] == '\0';
}

static uint64
name_hash(const char *key, int len)
{
	return tide_hash_bytes(key, len, TIDE_HASH_BASIS);
}

void
loader_name_map_hash(NameMap *m, MemoryContext mcxt)
{
	uint32		size = 16;

	while (size < (uint32) m->n * 2)
		size <<= 1;
	m->mask = size - 1;
	m->slot = MemoryContextAllocZero(mcxt, sizeof(int32) * size);
	for (int i = 0; i < m->n; i++)
	{
		NameKey		k = {(const char *const *) m->names, m->names[i], (int) strlen(m->names[i])};
		uint64		at = tide_table_find(m->slot, m->mask, name_hash(k.key, k.len), name_same, &k);

		/* names are unique (primary keys); a repeat keeps the first */
		if (m->slot[at] == 0)
			m->slot[at] = i + 1;
	}
}

/* Index of a text datum's value in the map, or -1 (no copy of the text). */
int
loader_name_index_text(const NameMap *m, Datum d)
{
	text	   *t = DatumGetTextPP(d);

	return loader_name_index_len(m, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
}

/* Index of the name of len bytes at key (no NUL needed) in the map, or -1. */
int
loader_name_index_len(const NameMap *m, const char *key, int len)
{
	int			lo = 0,
				hi = m->n - 1;

	if (m->slot)
	{
		NameKey		k = {(const char *const *) m->names, key, len};
		uint64		at = tide_table_find(m->slot, m->mask, name_hash(key, len), name_same, &k);

		return m->slot[at] - 1;
	}

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
 * A name interned into a small integer: looked up in *tab (made on first
 * use), else added to *names (grown by doubling) with the next id.
 * Names are compared on their first NAME_KEY_LEN - 1 bytes.
 */
#define NAME_KEY_LEN 320		/* a reason with a card type of up to 255 bytes */

/* An interned name's hash, kept by id for growing (a TideTableHash). */
static uint64
interned_hash(const void *ctx, int32 entry)
{
	return ((const InternTable *) ctx)->hash[entry];
}

static int32
intern_name(Loader *ld, InternTable *tab, const char *name, int len,
			const char ***names, int *n, int *cap)
{
	NameKey		k;
	uint64		h;
	uint64		at;
	char	   *copy;

	if (len > NAME_KEY_LEN - 1)
		len = NAME_KEY_LEN - 1;
	/* room for one more, at most half full (hash.h) */
	if (tab->slot == NULL || (uint64) (*n + 1) * 2 > tab->mask + 1)
	{
		uint64		size = tab->slot ? (tab->mask + 1) * 2 : 64;
		int32	   *slot = MemoryContextAllocZero(ld->l->mcxt, sizeof(int32) * size);

		if (tab->slot)
		{
			tide_table_rehash(slot, size - 1, tab->slot, tab->mask + 1, interned_hash, tab);
			pfree(tab->slot);
		}
		tab->slot = slot;
		tab->mask = size - 1;
	}
	k.names = *names;
	k.key = name;
	k.len = len;
	h = name_hash(name, len);
	at = tide_table_find(tab->slot, tab->mask, h, name_same, &k);
	if (tab->slot[at] != 0)
		return tab->slot[at] - 1;
	if (*n == *cap)
	{
		*cap = *cap == 0 ? 64 : *cap * 2;
		*names = *n == 0
			? MemoryContextAlloc(ld->l->mcxt, sizeof(char *) * *cap)
			: repalloc(*names, sizeof(char *) * *cap);
		tab->hash = tab->hash == NULL
			? MemoryContextAlloc(ld->l->mcxt, sizeof(uint64) * *cap)
			: repalloc(tab->hash, sizeof(uint64) * *cap);
	}
	copy = MemoryContextAlloc(ld->l->mcxt, len + 1);
	memcpy(copy, name, len);
	copy[len] = '\0';
	(*names)[*n] = copy;
	tab->hash[*n] = h;
	tab->slot[at] = *n + 1;
	return (*n)++;
}

/*
 * Names only jobs use (R-A2).  The snapshot's name table holds what nodes,
 * queues and live allocations name; a job that asks for any other resource
 * or card type can never fit, so it is marked unschedulable with that name
 * instead of adding it to the table: one tenant's made-up names can never
 * fill the table every other job's placement needs.  reason: the pending
 * reason's text, one per name.  Returns 1 + the id.
 */
int32
loader_unknown_name(Loader *ld, const char *reason)
{
	return 1 + intern_name(ld, &ld->unknown, reason, (int) strlen(reason),
						   &ld->unknown_names, &ld->nunknown, &ld->unknown_cap);
}

/*
 * Owners of jobs in queues with an owner limit (R-A4), as small integers
 * for the engine.  Owners are role names (tide.jobs.owner defaults to
 * CURRENT_USER), far shorter than the key.
 */
int32
loader_owner_id(Loader *ld, const char *name, int len)
{
	return intern_name(ld, &ld->owners, name, len,
					   &ld->owner_names, &ld->nowners, &ld->owners_cap);
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

/* Does memo hold the names of rv? */
static bool
memo_matches(const ResVecMemo *memo, const ResVec *rv)
{
	if (memo->count != rv->count || memo->names_size != rv->names_size)
		return false;
	for (int k = 0; k < rv->count; k++)
		if (memo->name_off[k] != rv->entries[k].name_off ||
			memo->name_len[k] != rv->entries[k].name_len)
			return false;
	return memcmp(memo->names, RESVEC_NAMES(rv), rv->names_size) == 0;
}

/* Remember rv's names in memo (their ids not set); false if they do not fit. */
static bool
memo_remember(ResVecMemo *memo, const ResVec *rv)
{
	if (rv->count > RESVEC_MEMO_MAX || rv->names_size > RESVEC_MEMO_BYTES)
	{
		memo->count = -1;
		return false;
	}
	memo->count = rv->count;
	memo->names_size = rv->names_size;
	memcpy(memo->names, RESVEC_NAMES(rv), rv->names_size);
	for (int k = 0; k < rv->count; k++)
	{
		memo->name_off[k] = rv->entries[k].name_off;
		memo->name_len[k] = rv->entries[k].name_len;
		memo->res[k] = -1;
	}
	return true;
}

bool
loader_resvec_names_seen(ResVecMemo *memo, const ResVec *rv)
{
	if (memo_matches(memo, rv))
		return true;
	memo_remember(memo, rv);
	return false;
}

const char *
loader_resvec_to_vec_memo(TideSnapshot *s, ResVecMemo *memo, Datum d, int64 *v)
{
	ResVec	   *rv = DatumGetResVecP(d);
	const char *missing = NULL;

	if (!memo_matches(memo, rv))
	{
		if (!memo_remember(memo, rv))
			return loader_resvec_to_vec(s, PointerGetDatum(rv), v);
		for (int k = 0; k < rv->count; k++)
			memo->res[k] = tide_res_lookup(s, resvec_name(rv, k));
	}
	for (int k = 0; k < rv->count; k++)
	{
		if (memo->res[k] >= 0)
			v[memo->res[k]] = resvec_milli(rv, k);
		else if (missing == NULL)
			missing = resvec_name(rv, k);
	}
	return missing;
}

void
loader_query_args(const Loader *ld, Oid *types, Datum *args, bool *nulls)
{
	types[0] = TEXTOID;
	types[1] = TEXTARRAYOID;
	types[2] = TEXTARRAYOID;
	types[3] = INT8ARRAYOID;
	args[0] = ld->group ? CStringGetTextDatum(ld->group) : (Datum) 0;
	args[1] = ld->group_queues;
	args[2] = ld->group_nodes;
	args[3] = ld->delta.changed_array;
	for (int i = 0; i < 3; i++)
		nulls[i] = ld->group == NULL;
	nulls[3] = !ld->delta.incremental;
}

CycleRowSet *
loader_changed_rows(Loader *ld, bool jobs, const char *changed_sql, int job_col)
{
	Oid			types[LOADER_NARGS];
	Datum		args[LOADER_NARGS];
	bool		nulls[LOADER_NARGS];
	CycleRowSet fresh;

	loader_query_args(ld, types, args, nulls);
	cycle_rowset_init(&fresh, ld->l->mcxt, job_col);
	/*
	 * Planned for each cycle's ids (a custom plan): a generic one, made for
	 * some ten ids, may test each row against the whole array (no hashed
	 * array for a parameter), rows x ids when thousands changed.
	 */
	cycle_stream_plan(cycle_kept_plan(changed_sql, LOADER_NARGS, types, CURSOR_OPT_CUSTOM_PLAN),
					  args, nulls, NULL, NULL, &fresh);
	return cycle_cache_rows(&ld->delta, jobs, job_col, &fresh);
}
