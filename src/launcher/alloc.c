/*
 * alloc.c: the table of known allocations, an index from id to entry, and
 * the one transition function of their states (see alloc.h).
 */
#include "alloc.h"

#include <stdlib.h>
#include <string.h>

Alloc	   *allocs;
int			nallocs;
static int	allocs_cap;

/*
 * An index from allocation id to its place in allocs[] (open addressing,
 * linear probing; slots hold index + 1, 0 is free): a burst of 10,000
 * allocations answers, reports and forgets each one by id.
 */
static int *id_slots;
static unsigned id_cap;

static unsigned
id_home(int64_t id)
{
	return (unsigned) (((uint64_t) id * 0x9E3779B97F4A7C15ull) >> 32) & (id_cap - 1);
}

static void
id_index_rebuild(void)
{
	free(id_slots);
	id_cap = 1024;
	while (id_cap < (unsigned) allocs_cap * 2)
		id_cap *= 2;
	id_slots = tl_realloc(NULL, id_cap * sizeof(int));
	memset(id_slots, 0, id_cap * sizeof(int));
	for (int i = 0; i < nallocs; i++)
	{
		unsigned	h = id_home(allocs[i].id);

		while (id_slots[h] != 0)
			h = (h + 1) & (id_cap - 1);
		id_slots[h] = i + 1;
	}
}

/* The slot that holds this id, or -1. */
static int
id_slot(int64_t id)
{
	if (id_cap == 0)
		return -1;
	for (unsigned h = id_home(id);; h = (h + 1) & (id_cap - 1))
	{
		if (id_slots[h] == 0)
			return -1;
		if (allocs[id_slots[h] - 1].id == id)
			return (int) h;
	}
}

/* Free a slot, shifting back the entries whose probe ran through it. */
static void
id_slot_free(unsigned i)
{
	unsigned	mask = id_cap - 1;

	for (unsigned j = (i + 1) & mask; id_slots[j] != 0; j = (j + 1) & mask)
	{
		unsigned	k = id_home(allocs[id_slots[j] - 1].id);

		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		id_slots[i] = id_slots[j];
		i = j;
	}
	id_slots[i] = 0;
}

Alloc *
alloc_find(int64_t id)
{
	int			h = id_slot(id);

	return h < 0 ? NULL : &allocs[id_slots[h] - 1];
}

/* The allocation whose running process has this pid, or NULL. */
Alloc *
alloc_find_pid(pid_t pid)
{
	for (int i = 0; i < nallocs; i++)
		if (allocs[i].pid == pid && !alloc_ended(&allocs[i]) && !alloc_spawning(&allocs[i]))
			return &allocs[i];
	return NULL;
}

Alloc *
alloc_add(int64_t id, int64_t job_id, int replica, AllocState state)
{
	Alloc	   *a;
	unsigned	h;

	if (nallocs == allocs_cap)
	{
		allocs_cap = allocs_cap ? allocs_cap * 2 : 64;
		allocs = tl_realloc(allocs, allocs_cap * sizeof(Alloc));
	}
	a = &allocs[nallocs++];
	memset(a, 0, sizeof(*a));
	a->id = id;
	a->job_id = job_id;
	a->replica = replica;
	a->state = state;
	a->grace = -1;
	if ((unsigned) nallocs * 2 > id_cap)
		id_index_rebuild();
	else
	{
		for (h = id_home(id); id_slots[h] != 0; h = (h + 1) & (id_cap - 1))
			;
		id_slots[h] = nallocs;
	}
	return a;
}

/* Remove by moving the last entry into the hole (pointers are not kept). */
void
alloc_remove(Alloc *a)
{
	int			i = (int) (a - allocs);
	int			h;

	if (i < 0 || i >= nallocs)
		return;
	h = id_slot(a->id);
	if (h >= 0)
		id_slot_free((unsigned) h);
	free(a->cvd);
	free(a->reason);
	if (i != nallocs - 1)
	{
		int			hl = id_slot(allocs[nallocs - 1].id);

		allocs[i] = allocs[nallocs - 1];
		if (hl >= 0)
			id_slots[hl] = i + 1;
	}
	nallocs--;
}

const char *
alloc_state_name(AllocState s)
{
	static const char *const names[] = {
		"spawning", "spawning_evicted", "running", "evicting", "killed", "exited", "stopped"
	};

	return (unsigned) s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

/* Is from -> to one of the arrows of alloc.h? (Staying put is allowed.) */
static bool
transition_allowed(AllocState from, AllocState to)
{
	if (from == to)
		return true;
	switch (from)
	{
		case AS_SPAWNING:
			return to == AS_RUNNING || to == AS_SPAWNING_EVICTED || to == AS_EXITED;
		case AS_SPAWNING_EVICTED:
			return to == AS_EVICTING || to == AS_STOPPED;
		case AS_RUNNING:
			return to == AS_EXITED || to == AS_EVICTING || to == AS_STOPPED;
		case AS_EVICTING:
			return to == AS_KILLED || to == AS_STOPPED || to == AS_EXITED;
		case AS_KILLED:
			return to == AS_STOPPED;
		case AS_EXITED:
		case AS_STOPPED:
			return false;
	}
	return false;
}

/*
 * Move an allocation to a new state.  A change that is not an arrow of
 * alloc.h is a bug of the launcher: it is logged and refused (false).
 */
bool
alloc_set_state(Alloc *a, AllocState to)
{
	if (!transition_allowed(a->state, to))
	{
		tl_log("error", "alloc=%lld: no transition from %s to %s (a launcher bug; the allocation keeps its state)",
			   (long long) a->id, alloc_state_name(a->state), alloc_state_name(to));
		return false;
	}
	a->state = to;
	return true;
}

/* Its SIGTERM-to-SIGKILL time: the job's grace_period, else the launcher's. */
double
alloc_grace(const Alloc *a)
{
	return a->grace >= 0 ? a->grace : opt.grace_period;
}
